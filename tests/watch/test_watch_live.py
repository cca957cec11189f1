"""A running session's log, live: server-sent events of the lines written after the page
was opened, a keep-alive while the session is quiet, a resume from `Last-Event-ID`, and
`end` once the session finishes."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from ballet.settings import Settings
from watch_kit import Site, finish_session, lines, live_url_of, new_ticket, running_site

pytestmark = pytest.mark.anyio

# The keep-alive after this many quiet seconds (BALLET_LIVE_KEEPALIVE_SECONDS, by
# default 15): the stream reads in 4 s waits, so it comes after the first wait past it.
KEEPALIVE = 3.0


@pytest.fixture
async def quick_site(watch_redis_url: str, tmp_path: Path) -> AsyncIterator[Site]:
    """The pages, their live logs' keep-alive after KEEPALIVE quiet seconds."""
    async with running_site(tmp_path, watch_redis_url, live_keepalive_seconds=KEEPALIVE) as running:
        yield running


class Events:
    """A text/event-stream read as it arrives: comments and events, in order."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()

    async def next(self, timeout: float = 20.0) -> dict[str, str]:
        """The next event or comment: {"comment": …} or {"event", "id", "data"}."""
        found: dict[str, str] = {}
        async with asyncio.timeout(timeout):
            async for line in self._lines:
                if line == "":
                    if found:
                        return found
                    continue
                field, _, value = line.partition(":")
                if field == "":
                    return {"comment": value.strip()}
                found[field] = value.lstrip(" ")
        raise AssertionError(f"the stream ended; last read {found}")

    async def next_event(self, timeout: float = 20.0) -> dict[str, str]:
        while "event" not in (found := await self.next(timeout)):
            pass
        return found

    async def closed(self, timeout: float = 10.0) -> list[str]:
        """What is left until the server closes the stream (it must, within `timeout`)."""
        async with asyncio.timeout(timeout):
            return [line async for line in self._lines]

    async def lines(self, count: int) -> tuple[list[dict[str, object]], str]:
        """The next `count` lines (one event or several, as they were read), and the
        id of the event that brought the last."""
        got: list[dict[str, object]] = []
        while len(got) < count:
            event = await self.next_event()
            assert event["event"] == "lines", event
            got += json.loads(event["data"])
        return got, event["id"]


async def test_lines_written_after_connecting_stream_live_then_end(quick_site: Site) -> None:
    site = quick_site
    await site.create_repo("acme", "open", private=False, collaborators={})
    record = await new_ticket(site, "acme/open", 5, "Live")
    run = record.open_run
    assert run is not None and run.job_key is not None
    key = run.job_key
    await site.logs.append(key, lines(["before the page was opened"]))
    session = "/tickets/acme/open/5/sessions/implement/1/1"

    async with site.browser() as browser:
        page = await browser.get(session)
        assert "before the page was opened" in page.text
        live = live_url_of(page.text)
        async with browser.stream("GET", live) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["cache-control"] == "no-store"
            events = Events(response)
            assert await events.next() == {"retry": "3000"}
            # Quiet: a keep-alive comment after KEEPALIVE seconds, so proxies keep the stream.
            started = time.monotonic()
            assert await events.next(timeout=25) == {"comment": "keep-alive"}
            assert time.monotonic() - started >= KEEPALIVE - 1
            assert Settings.model_fields["live_keepalive_seconds"].default == 15.0
            await site.logs.append(key, lines(["first live line", "<b>second</b>"], first=1))
            sent, resume_from = await events.lines(2)
            # Only what came after the page: the scrollback is the page's own.
            assert [line["text"] for line in sent] == ["first live line", "<b>second</b>"]
            assert [line["stream"] for line in sent] == ["stdout", "stdout"]

        # The browser reconnects with the last event's id and misses nothing.
        await site.logs.append(key, lines(["while away"], first=3))
        async with browser.stream(
            "GET", live.split("?")[0], headers={"Last-Event-ID": resume_from}
        ) as response:
            events = Events(response)
            sent, _ = await events.lines(1)
            assert [line["text"] for line in sent] == ["while away"]
            # The session ends: its log is kept whole, and the stream says so and closes.
            await site.logs.finish(key, b"before\nfirst\nsecond\nwhile away\n", [])
            await finish_session(site, record, "done", "done")
            end = await events.next_event()
            assert end["event"] == "end"
            assert not any(await events.closed())

        # Now the page holds the finished log and follows nothing.
        page = await browser.get(session)
        assert "while away" in page.text and "data-live" not in page.text


async def readers(site: Site) -> int:
    """Connections blocked reading a live tail right now (the pages' XREAD BLOCK)."""
    clients = await site.redis.client_list()
    return sum(1 for c in clients if c.get("cmd") == "xread")


async def test_a_closed_page_stops_its_stream(site: Site) -> None:
    await site.create_repo("acme", "open", private=False, collaborators={})
    await new_ticket(site, "acme/open", 6, "Closed early")
    session = "/tickets/acme/open/6/sessions/implement/1/1"
    async with site.browser() as browser:
        async with browser.stream("GET", f"{session}/live") as response:
            assert await Events(response).next() == {"retry": "3000"}
            async with asyncio.timeout(10):
                while await readers(site) == 0:
                    await asyncio.sleep(0.1)
        # The browser went away: the web app stops reading the tail for it within a
        # read's wait (4 s), not at its next keep-alive.
        async with asyncio.timeout(8):
            while await readers(site) > 0:
                await asyncio.sleep(0.2)
