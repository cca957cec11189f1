"""The listing, a ticket's page and the fleet page, live: server-sent events saying "changed".

`GET /tickets/live`, `GET /fleet/live` and `GET /tickets/<o>/<r>/<n>/live`
send an event `changed` whenever a ticket transition is committed (a stage
moves, a session starts or ends, a question is asked or answered): the page's
script then fetches the page afresh, as a reload would, and puts its new
`<main>` in place. So the stream carries no ticket's content: who sees what is
decided by the page, on every fetch, exactly as on a reload, and with scripts
off a reload shows the same.

Each stream looks at the ticket index's commit counter (`ticket_index.CHANGED`,
one GET) every `POLL_SECONDS`; a ticket's stream then reads that ticket's
summary, and says `changed` only when its version moved. `?since=` is the
counter (or the ticket's version) the page was rendered at, so a transition
between the render and the stream's start is not missed. A ticket's stream
stops when the viewer may no longer read it (asked again every minute).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ballet.core.record import ticket_key
from ballet.tickets.ticket_index import TicketIndex
from ballet.watch.access import CACHE_SECONDS, AccessUnknown
from ballet.watch.lookup import Seen, visible_ticket
from ballet.watch.render import private_headers
from ballet.watch.state import watch_state

POLL_SECONDS = 0.25  # a page follows a transition within this and one fetch
_STAMP = re.compile(r"^\d{1,18}$")


async def listing_live(request: Request) -> Response:
    """The listing's and the fleet page's stream: any commit may change them."""
    index = TicketIndex(watch_state(request).redis)
    return _stream(request, index.changed, None)


async def ticket_live(request: Request) -> Response:
    seen = await visible_ticket(request)
    if not isinstance(seen, Seen):
        return seen
    index = TicketIndex(watch_state(request).redis)
    key = ticket_key(seen.record.ticket.repo, seen.record.ticket.number)

    async def version() -> int:
        found = await index.summaries([key])
        return found[0].version if found else 0

    return _stream(request, _when_moved(index.changed, version), seen)


def _when_moved(
    counter: Callable[[], Awaitable[int]], stamp: Callable[[], Awaitable[int]]
) -> Callable[[], Awaitable[int]]:
    """`stamp`, read only when the commit counter moved since it was last read."""
    last: list[int] = []
    value: list[int] = []

    async def read() -> int:
        now = await counter()
        if last != [now]:
            last[:] = [now]
            value[:] = [await stamp()]
        return value[0]

    return read


def _stream(request: Request, stamp: Callable[[], Awaitable[int]], seen: Seen | None) -> Response:
    raw = request.query_params.get("since", "")
    since = int(raw) if _STAMP.match(raw) else None
    response = StreamingResponse(
        _events(request, stamp, since, seen),
        media_type="text/event-stream",
        headers={"X-Accel-Buffering": "no"},  # proxies such as nginx would hold them back
    )
    return private_headers(response)


async def _events(
    request: Request, stamp: Callable[[], Awaitable[int]], since: int | None, seen: Seen | None
) -> AsyncIterator[str]:
    keepalive = watch_state(request).config.keepalive_seconds
    quiet_since = checked_at = time.monotonic()
    known = await stamp()
    yield "retry: 2000\n\n"
    if since is not None and since != known:
        yield f"event: changed\ndata: {known}\n\n"
    while not await request.is_disconnected():
        await asyncio.sleep(POLL_SECONDS)
        now = time.monotonic()
        current = await stamp()
        if current != known:
            known = current
            quiet_since = now
            yield f"event: changed\ndata: {current}\n\n"
        elif now - quiet_since >= keepalive:
            quiet_since = now
            yield ": keep-alive\n\n"
        if seen is not None and now - checked_at >= CACHE_SECONDS:
            checked_at = now
            if not await _still_readable(request, seen):
                return


async def _still_readable(request: Request, seen: Seen) -> bool:
    state, viewer = watch_state(request), seen.viewer
    if viewer is not None and not await state.signed_in.holds(viewer):
        viewer = None  # signed out since the stream began: it goes on only if anyone may read
    try:
        permission = await state.access.permission(seen.record.ticket.repo, viewer)
    except AccessUnknown:
        return True  # GitHub is down, not the access: keep what was allowed
    return permission is not None
