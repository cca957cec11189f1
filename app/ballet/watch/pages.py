"""The pages: what Ballet is, the tickets a viewer may see, and one ticket."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response

from ballet.core.commands import HELP_TEXT, Verb
from ballet.core.companion_reds import red_on_head
from ballet.core.machine import COMMANDS
from ballet.core.record import Record
from ballet.watch.access import may_write
from ballet.watch.lookup import Seen, visible_ticket
from ballet.watch.pipeline_layout import drawing
from ballet.watch.render import page
from ballet.watch.state import viewer_of, watch_state
from ballet.watch.times import ticket_times
from ballet.watch.views import diagram, row, runs, ticket_spent, ticket_text

# The commands a writer may give from a ticket's page, in the order shown.
BUTTONS: tuple[Verb, ...] = ("retry", "pause", "resume", "cancel")


async def home(request: Request) -> Response:
    state = watch_state(request)
    return page(
        state.templates,
        request,
        "home.html",
        await viewer_of(request),
        sign_in=state.config.sign_in,
        help_text=HELP_TEXT,
        has_app=state.github is not None,
    )


async def ticket(request: Request) -> Response:
    seen = await visible_ticket(request)
    if not isinstance(seen, Seen):
        return seen
    state = watch_state(request)
    record = seen.record
    return page(
        state.templates,
        request,
        "ticket.html",
        seen.viewer,
        sign_in=state.config.sign_in,
        record=record,
        text=ticket_text(record.ticket.title, record.text.body if record.text else None),
        row=row(record),
        nodes=diagram(record),
        drawing=drawing(record),
        times=ticket_times(record, datetime.now(UTC)),
        runs=runs(record),
        spent=ticket_spent(record),
        spend_page=f"/spend/{record.ticket.repo}" if may_write(seen.permission) else "",
        buttons=buttons(record) if seen.viewer and may_write(seen.permission) else [],
        sent=_sent(request) if seen.viewer else "",
        github=_github_links(state.config.github_web_url, record),
        companions=companion_links(state.config.github_web_url, record),
    )


def _sent(request: Request) -> str:
    """The command the viewer just gave here (the redirect after a button says which);
    only a button's name, so a link cannot put words of its own on the page."""
    sent = request.query_params.get("sent", "")
    return sent if sent in BUTTONS else ""


def buttons(record: Record) -> list[str]:
    """The commands that act on the ticket as it stands (the core's own table)."""
    return [verb for verb in BUTTONS if record.status in COMMANDS[verb].when]


def _github_links(web_url: str, record: Record) -> dict[str, str]:
    repo = record.ticket.repo
    pull = f"{web_url}/{repo}/pull/{record.pr_number}" if record.pr_number else ""
    return {"issue": f"{web_url}/{repo}/issues/{record.ticket.number}", "pull": pull}


def companion_links(web_url: str, record: Record) -> list[dict[str, str]]:
    """The ticket's pull requests in its companions, in landing order, with their state."""
    return [
        {
            "name": f"{pr.repo}#{pr.number}" if pr.number else pr.repo,
            "url": f"{web_url}/{pr.repo}/pull/{pr.number}" if pr.number else "",
            # A pushed head whose pull request Ballet has not opened yet.
            "state": pr.state if pr.number else "its pull request being opened",
            # Heard red while a session ran: the landing returns the ticket for it.
            "red": red_on_head(pr) or "",
        }
        for pr in record.companion_prs
    ]
