"""A ticket as a page asks for it: only once GitHub says the viewer may read its repository.

Access is asked before the record is read, and a ticket the viewer may not
see gets the very same 404 as one that does not exist: no page, stream or
download ever tells whether a private repository holds a ticket.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from starlette.requests import Request
from starlette.responses import Response

from ballet.core.events import Permission
from ballet.core.record import Record, ticket_key
from ballet.watch.access import AccessUnknown
from ballet.watch.cookies import Viewer
from ballet.watch.render import page
from ballet.watch.state import viewer_of, watch_state

log = structlog.get_logger("ballet.watch")


@dataclass(frozen=True)
class Seen:
    record: Record
    permission: Permission
    viewer: Viewer | None


async def visible_ticket(request: Request, *, fresh: bool = False) -> Seen | Response:
    """The ticket the URL names, or the response to send instead (404, or 503)."""
    viewer = await viewer_of(request)
    params = request.path_params
    repo = f"{params['owner']}/{params['repo']}"
    try:
        permission = await watch_state(request).access.permission(repo, viewer, fresh=fresh)
    except AccessUnknown as exc:
        log.warning("access unknown", error=str(exc))
        return unavailable(request, viewer)
    if permission is None:
        return not_found(request, viewer)
    record = await watch_state(request).store.cached(ticket_key(repo, params["number"]))
    if record is None:
        return not_found(request, viewer)
    return Seen(record, permission, viewer)


def not_found(request: Request, viewer: Viewer | None) -> Response:
    """One page for every ticket, session or log a viewer cannot have, whatever the reason."""
    state = watch_state(request)
    return page(
        state.templates,
        request,
        "not_found.html",
        viewer,
        status=404,
        sign_in=state.config.sign_in,
    )


def unavailable(request: Request, viewer: Viewer | None) -> Response:
    state = watch_state(request)
    return page(
        state.templates,
        request,
        "unavailable.html",
        viewer,
        status=503,
        sign_in=state.config.sign_in,
    )
