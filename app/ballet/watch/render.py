"""Pages as HTML: Jinja2 templates (autoescaped), sent with headers that keep them private.

Every page gets a fresh CSP nonce: the little inline JavaScript the log pages
carry runs, and nothing a log line or a title could smuggle in does. Pages
show tickets of private repositories to the people allowed to see them, so
no cache keeps them and no other site may frame them.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse

from ballet.core.durations import spoken
from ballet.watch.cookies import Viewer
from ballet.watch.markdown import rendered


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("ballet.watch", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = when
    env.filters["duration"] = duration
    env.filters["spoken"] = spoken
    env.filters["markdown"] = rendered
    return env


def private_headers(response: Response, nonce: str | None = None) -> Response:
    script = f"'nonce-{nonce}'" if nonce else "'none'"
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; script-src {script}; style-src 'unsafe-inline';"
        " connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none';"
        " base-uri 'none'"
    )
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response


def page(
    env: Environment,
    request: Request,
    template: str,
    viewer: Viewer | None,
    *,
    status: int = 200,
    sign_in: bool = True,
    **context: Any,
) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    body = env.get_template(template).render(
        viewer=viewer,
        sign_in=sign_in,
        nonce=nonce,
        here=request.url.path,
        **context,
    )
    response = HTMLResponse(body, status_code=status)
    private_headers(response, nonce)
    return response


def when(moment: datetime | float | None) -> str:
    if moment is None:
        return "—"
    if isinstance(moment, float | int):
        moment = datetime.fromtimestamp(moment, UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(start: datetime | None, end: datetime | None = None) -> str:
    """How long from `start` to `end` (or to now): `340 ms` under a second, never `0s`."""
    if start is None:
        return "—"
    return spoken(((end or datetime.now(UTC)) - start).total_seconds())


def streamed_page(
    env: Environment,
    request: Request,
    template: str,
    viewer: Viewer | None,
    slot: Callable[[str], Awaitable[str]],
    *,
    sign_in: bool = True,
    **context: Any,
) -> StreamingResponse:
    """A page whose costly part (a finished log, megabytes) is read and rendered only
    after the rest has been sent: the browser shows the run and its report at once.
    `slot(nonce)` gives that part's HTML; the template places `log_slot`."""
    nonce = secrets.token_urlsafe(16)
    marker = f"ballet-slot-{secrets.token_hex(8)}"
    body = env.get_template(template).render(
        viewer=viewer,
        sign_in=sign_in,
        nonce=nonce,
        here=request.url.path,
        log_slot=marker,
        **context,
    )
    head, _, tail = body.partition(marker)

    async def chunks() -> AsyncIterator[str]:
        yield head
        yield await slot(nonce)
        yield tail

    response = StreamingResponse(chunks(), media_type="text/html; charset=utf-8")
    private_headers(response, nonce)
    return response
