"""A running session's log, live, as server-sent events.

`GET …/live` streams the lines the session writes from the point the page
already shows (`?after=<entry id>`, or on a reconnect the browser's own
`Last-Event-ID`): each event `lines` carries a JSON list of lines and, as its
id, the live tail's entry id after them. An event `end` says the session
finished; a comment every 15 seconds keeps proxies from closing a quiet
stream. The stream stops when the client goes away, and when the viewer's
access to the repository ends or they sign out (asked again every minute).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ballet.core.terminal_text import visible_controls
from ballet.sessionlog.store import SessionLogs
from ballet.watch.access import CACHE_SECONDS, AccessUnknown
from ballet.watch.lookup import not_found
from ballet.watch.render import private_headers
from ballet.watch.sessions import Session, session_of
from ballet.watch.state import logs_of, watch_state

# Each read waits this long for a line (the store caps it below the pool's timeout),
# so a closed connection or a lost access is noticed within it.
BLOCK_MS = 4000
READ_COUNT = 500
_ENTRY_ID = re.compile(r"^\d{1,20}-\d{1,20}$")


async def live(request: Request) -> Response:
    found = await session_of(request)
    if not isinstance(found, Session):
        return found
    logs = logs_of(request)
    if logs is None:
        return not_found(request, found.seen.viewer)
    after = request.headers.get("last-event-id") or request.query_params.get("after") or ""
    if not _ENTRY_ID.match(after):
        after = "0-0"
    response = StreamingResponse(
        _events(request, logs, found, after),
        media_type="text/event-stream",
        # Proxies such as nginx would hold the events back in a buffer.
        headers={"X-Accel-Buffering": "no"},
    )
    return private_headers(response)


async def _events(
    request: Request, logs: SessionLogs, found: Session, after: str
) -> AsyncIterator[str]:
    keepalive = watch_state(request).config.keepalive_seconds
    quiet_since = checked_at = time.monotonic()
    yield "retry: 3000\n\n"
    while not await request.is_disconnected():
        chunk = await logs.live(found.job_key, after=after, block_ms=BLOCK_MS, count=READ_COUNT)
        now = time.monotonic()
        if chunk.lines:
            lines = [
                {
                    "seq": line.seq,
                    "stream": line.stream,
                    "text": visible_controls(line.text),
                    "at": line.at,
                }
                for line in chunk.lines
            ]
            yield f"id: {chunk.last_id}\nevent: lines\ndata: {json.dumps(lines)}\n\n"
            quiet_since = now
        after = chunk.last_id
        if chunk.finished:
            yield f"id: {after}\nevent: end\ndata: {{}}\n\n"
            return
        if now - quiet_since >= keepalive:
            yield ": keep-alive\n\n"
            quiet_since = now
        if now - checked_at >= CACHE_SECONDS:
            checked_at = now
            if not await _still_readable(request, found):
                return


async def _still_readable(request: Request, found: Session) -> bool:
    repo = found.seen.record.ticket.repo
    state, viewer = watch_state(request), found.seen.viewer
    if viewer is not None and not await state.signed_in.holds(viewer):
        viewer = None  # signed out since the stream began: it goes on only if anyone may read
    try:
        permission = await state.access.permission(repo, viewer)
    except AccessUnknown:
        return True  # GitHub is down, not the access: keep streaming what was allowed
    return permission is not None
