"""Concurrent look-ups of one key share one call: its answer or its error reaches every
waiter, and a waiter that goes away leaves the call running for the others."""

from __future__ import annotations

import asyncio

import pytest
from ballet.watch.single_flight import SingleFlight

pytestmark = pytest.mark.anyio


class Slow:
    """A look-up that waits to be let go, counting how often it ran."""

    def __init__(self, answer: str | Exception) -> None:
        self.calls = 0
        self.go = asyncio.Event()
        self._answer = answer

    async def __call__(self) -> str:
        self.calls += 1
        await self.go.wait()
        if isinstance(self._answer, Exception):
            raise self._answer
        return self._answer


async def test_a_hundred_waiters_share_one_call_and_its_answer() -> None:
    flights: SingleFlight[str] = SingleFlight()
    look_up = Slow("public")
    waiters = [asyncio.create_task(flights.run("acme/open", look_up)) for _ in range(100)]
    await asyncio.sleep(0)
    look_up.go.set()
    assert await asyncio.gather(*waiters) == ["public"] * 100
    assert look_up.calls == 1 and flights.in_flight() == 0
    # Landed, the next ask is a call of its own (the cache behind it is Redis's).
    again = Slow("private")
    again.go.set()
    assert await flights.run("acme/open", again) == "private" and again.calls == 1


async def test_an_error_reaches_every_waiter() -> None:
    flights: SingleFlight[str] = SingleFlight()
    look_up = Slow(RuntimeError("GitHub answered 502"))
    waiters = [asyncio.create_task(flights.run("acme/open", look_up)) for _ in range(5)]
    await asyncio.sleep(0)
    look_up.go.set()
    found = await asyncio.gather(*waiters, return_exceptions=True)
    assert [str(e) for e in found] == ["GitHub answered 502"] * 5
    assert look_up.calls == 1


async def test_a_waiter_going_away_does_not_cancel_the_call_for_the_others() -> None:
    flights: SingleFlight[str] = SingleFlight()
    look_up = Slow("public")
    first = asyncio.create_task(flights.run("acme/open", look_up))  # started the call
    second = asyncio.create_task(flights.run("acme/open", look_up))
    await asyncio.sleep(0)
    first.cancel()  # its browser closed the connection
    with pytest.raises(asyncio.CancelledError):
        await first
    look_up.go.set()
    assert await second == "public" and look_up.calls == 1


async def test_every_waiter_gone_the_call_still_lands() -> None:
    flights: SingleFlight[str] = SingleFlight()
    look_up = Slow(RuntimeError("nobody hears this"))
    only = asyncio.create_task(flights.run("acme/open", look_up))
    await asyncio.sleep(0)
    only.cancel()
    look_up.go.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert flights.in_flight() == 0 and look_up.calls == 1
