"""The mirror's lock (sessions/mirror.py `locked`): a free lock is taken at once, on
the event loop, not through a thread (each thread's round trip waited for a busy
loop on every session's path); a held one is waited for, without blocking the loop."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from ballet.sessions.mirror import locked

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_free_lock_is_taken_without_a_thread(tmp_path: Path) -> None:
    mirror = tmp_path / "mirrors" / "octo" / "demo.git"
    busy, release = threading.Event(), threading.Event()
    # The loop's only thread for to_thread is kept busy: a lock taken through it waits.
    executor = ThreadPoolExecutor(max_workers=1)
    asyncio.get_running_loop().set_default_executor(executor)
    executor.submit(lambda: (busy.set(), release.wait(30)))
    busy.wait(10)
    try:
        async with asyncio.timeout(5):
            async with locked(mirror):
                pass
    finally:
        release.set()
        executor.shutdown(wait=True)


async def test_a_held_lock_is_waited_for_while_the_loop_runs(tmp_path: Path) -> None:
    mirror = tmp_path / "mirrors" / "octo" / "demo.git"
    order: list[str] = []

    async def second() -> None:
        async with locked(mirror):
            order.append("second")

    async with locked(mirror):
        waiting = asyncio.create_task(second())
        await asyncio.sleep(0.1)  # the loop runs while the second waits
        order.append("first")
    await waiting
    assert order == ["first", "second"]
