"""A writer's Cancel, Retry, Pause and Resume: the same commands as `/ballet cancel` and co.

The web app never runs the engine: it puts a `CommandIssued` for the ticket on
the events queue, the way a session's result goes there, and the worker's
ticket-event job applies it under the ticket's lock like a comment's command.
The core checks again who may give it (the permission carried here is the one
GitHub gave just now, never the cached one). A command from a page has no
comment, so nothing is replied or reacted to: the page shows the outcome once
the record changes.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import structlog
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ballet.core.commands import Command
from ballet.core.events import CommandIssued
from ballet.core.pages import ticket_path
from ballet.jobs.ticket_events import send_ticket_event
from ballet.watch.access import may_write
from ballet.watch.forms import csrf_refusal, form_of
from ballet.watch.lookup import Seen, not_found, visible_ticket
from ballet.watch.pages import BUTTONS
from ballet.watch.render import page
from ballet.watch.state import viewer_of, watch_state

log = structlog.get_logger("ballet.watch")


async def command(request: Request) -> Response:
    state = watch_state(request)
    viewer = await viewer_of(request)
    verb = next((v for v in BUTTONS if v == request.path_params["verb"]), None)
    if verb is None:
        return not_found(request, viewer)
    form = await form_of(request)
    refusal = csrf_refusal(request, viewer, form, state.public_url(request))
    if refusal is not None or viewer is None:
        return await _forbidden(request, refusal or "sign in first")
    seen = await visible_ticket(request, fresh=True)
    if not isinstance(seen, Seen):
        return seen
    if not may_write(seen.permission):
        return await _forbidden(
            request,
            f"it needs write permission on the repository (you have {seen.permission});"
            " ask someone with write access to give it.",
        )
    record = seen.record
    event = CommandIssued(
        now=datetime.now(UTC),
        command=Command(verb=verb),
        author=viewer.login,
        permission=seen.permission,
        comment_id=None,
    )
    await send_ticket_event(state.redis, record.key, event, event_id=f"web:{uuid.uuid4().hex}")
    log.info("command from the web", ticket=record.key, verb=verb, author=viewer.login)
    target = ticket_path(record.ticket.repo, record.ticket.number)
    return RedirectResponse(f"{target}?sent={verb}", status_code=303)


async def _forbidden(request: Request, why: str) -> Response:
    state = watch_state(request)
    return page(
        state.templates,
        request,
        "message.html",
        await viewer_of(request),
        status=403,
        sign_in=state.config.sign_in,
        title="Refused",
        message=f"Ballet did not act: {why}",
    )
