"""A session's page: its run, its report and its log; and the log as a download.

A finished session's log is in the page itself (its rendered steps, then its
lines, escaped), searchable by a few lines of inline JavaScript. A running
one's page holds the lines so far and follows the rest live (`live.py`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import structlog
from obstore.exceptions import BaseError as ObjectStoreError
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ballet.core.pages import ticket_path
from ballet.core.record import StageRun
from ballet.core.terminal_text import VisibleStream, visible_controls
from ballet.jobs.artifacts import Artifact
from ballet.sessionlog.sink import LogLine
from ballet.sessionlog.store import SessionLogs
from ballet.watch.lookup import Seen, not_found, visible_ticket
from ballet.watch.render import page, private_headers, streamed_page
from ballet.watch.state import logs_of, watch_state
from ballet.watch.views import find_run, run_name

log = structlog.get_logger("ballet.watch")

# What the log store raises when it cannot be read (Redis, the object store).
LOG_STORE_ERRORS = (RedisError, OSError, ObjectStoreError)
# A page holds at most this many of a log's lines (its end); the download has all.
PAGE_LINES = 20_000
READ_COUNT = 1000


@dataclass(frozen=True)
class Session:
    seen: Seen
    run: StageRun
    job_key: str


async def session_of(request: Request) -> Session | Response:
    """The session the URL names, once the viewer may read its ticket; else a 404."""
    seen = await visible_ticket(request)
    if not isinstance(seen, Seen):
        return seen
    params = request.path_params
    run = find_run(
        seen.record,
        params["stage"],
        params["iteration"],
        params["attempt"],
        params.get("phase"),
    )
    if run is None or run.job_key is None:
        return not_found(request, seen.viewer)
    return Session(seen, run, run.job_key)


async def session_page(request: Request) -> Response:
    found = await session_of(request)
    if not isinstance(found, Session):
        return found
    state = watch_state(request)
    logs = logs_of(request)
    lines: list[tuple[str, str]] = []  # (stream, text)
    last_id, live, unreadable = "0-0", False, False
    try:
        if logs is not None and await logs.meta(found.job_key) is not None:
            return await _finished_page(request, found, logs)
        if logs is not None:
            tail, last_id, done = await _so_far(logs, found.job_key)
            lines = [(line.stream, visible_controls(line.text)) for line in tail]
            live = not done
    except LOG_STORE_ERRORS as exc:
        # The run and its report are worth showing while the log store is down.
        log.warning("session log unreadable", job_key=found.job_key, error=str(exc))
        unreadable = True
    cut = max(0, len(lines) - PAGE_LINES)
    return page(
        state.templates,
        request,
        "session.html",
        found.seen.viewer,
        **await _context(request, found, logs_kept=logs is not None, unreadable=unreadable),
        steps=(),
        lines=lines[cut:],
        cut=cut,
        first=cut + 1,
        live=live,
        last_id=last_id,
    )


async def _context(
    request: Request, found: Session, *, logs_kept: bool, unreadable: bool
) -> dict[str, Any]:
    """What a session's page shows besides its log's lines."""
    state = watch_state(request)
    record, run = found.seen.record, found.run
    artifacts = await state.artifacts.of(record.key)
    report = next((a for a in artifacts if a.job_key == found.job_key), None)
    return {
        "sign_in": state.config.sign_in,
        "record": record,
        "run": run,
        "name": run_name(run),
        "ticket": ticket_path(record.ticket.repo, record.ticket.number),
        "report": report.report if isinstance(report, Artifact) else None,
        "handoff": report.handoff if isinstance(report, Artifact) else None,
        "logs_kept": logs_kept,
        "unreadable": unreadable,
        "base": request.url.path.rstrip("/"),
    }


async def _finished_page(request: Request, found: Session, logs: SessionLogs) -> Response:
    """A finished session's page, its log streamed in after the rest (a 20 MB log takes
    a while to read and render; the run and its report need not wait for it)."""
    state = watch_state(request)

    async def log_part(nonce: str) -> str:
        try:
            finished = await logs.read(found.job_key)
        except LOG_STORE_ERRORS as exc:
            log.warning("session log unreadable", job_key=found.job_key, error=str(exc))
            finished = None
        if finished is None:
            return '<p class="flash">The log store did not answer: reload the page in a minute.</p>'
        lines = visible_controls(finished.log.decode("utf-8", "backslashreplace")).splitlines()
        cut = max(0, len(lines) - PAGE_LINES)
        return state.templates.get_template("session_log.html").render(
            steps=[
                step.model_copy(
                    update={
                        "title": visible_controls(step.title),
                        "body": visible_controls(step.body),
                    }
                )
                for step in finished.steps
            ],
            lines=[("", line) for line in lines[cut:]],
            cut=cut,
            first=cut + 1,
            live=False,
            last_id="0-0",
            base=request.url.path.rstrip("/"),
            nonce=nonce,
        )

    return streamed_page(
        state.templates,
        request,
        "session.html",
        found.seen.viewer,
        log_part,
        **await _context(request, found, logs_kept=True, unreadable=False),
        live=False,
        last_id="0-0",
    )


async def raw_log(request: Request) -> Response:
    found = await session_of(request)
    if not isinstance(found, Session):
        return found
    logs = logs_of(request)
    if logs is None:
        return not_found(request, found.seen.viewer)
    headers = {"Content-Disposition": f'attachment; filename="{_file_name(found.job_key)}"'}
    raw = await logs.read_raw(found.job_key, decompress=True)
    if raw is not None:
        response: Response = StreamingResponse(
            _visible(raw.chunks), media_type="text/plain; charset=utf-8", headers=headers
        )
    else:
        tail, _, _ = await _so_far(logs, found.job_key)
        text = "".join(f"{visible_controls(line.text)}\n" for line in tail)
        response = Response(text, media_type="text/plain; charset=utf-8", headers=headers)
    return private_headers(response)


async def _visible(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The stored log's bytes with no control a terminal would obey (core/terminal_text.py)."""
    stream = VisibleStream()
    async for chunk in chunks:
        yield stream.feed(chunk)
    yield stream.end()


async def _so_far(logs: SessionLogs, job_key: str) -> tuple[list[LogLine], str, bool]:
    """The live tail's lines so far, the id to follow on from, and whether it ended."""
    lines: list[LogLine] = []
    after = "0-0"
    while True:
        chunk = await logs.live(job_key, after=after, count=READ_COUNT)
        lines += chunk.lines
        after = chunk.last_id
        if chunk.finished or len(chunk.lines) < READ_COUNT:
            return lines, after, chunk.finished


def _file_name(job_key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", job_key).strip("-") + ".log"
