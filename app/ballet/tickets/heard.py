"""What the ticket service asks GitHub before an event from a person reaches the
engine: whether that person may be heard (their permission, read as for slash
commands), and the issue's text for `/ballet refresh` to adopt. The core decides
what counts (core/reviews.py, core/edits.py); this only reads.
"""

from __future__ import annotations

import structlog

from ballet.core.commands import Command, ParsedCommand
from ballet.core.events import AnyEvent, IssueEdited, IssueText, ReviewSubmitted
from ballet.core.record import TERMINAL, split_key
from ballet.core.reviews import VERDICTS
from ballet.github.forge import Forge, ForgeError, ForgeUnavailable, RateLimited
from ballet.tickets.store import RecordStore

log = structlog.get_logger("ballet.github")


async def with_permission(
    forge: Forge, store: RecordStore, key: str, event: AnyEvent, *, where: str | None = None
) -> AnyEvent | None:
    """`event` with its author's permission where only a writer's counts (a review's
    verdict, read in the repository `where` it was given: a companion's is its writers';
    an edit of the issue; a bot's is never asked); None for an edit of an issue that is
    no live ticket's, which costs no permission look-up."""
    repo, _ = split_key(key)
    if isinstance(event, ReviewSubmitted) and event.state in VERDICTS and not event.author_is_bot:
        permission = await forge.permission(where or repo, event.author)
        return event.model_copy(update={"permission": permission})
    if not isinstance(event, IssueEdited):
        return event
    record = await store.load(key, forge)
    if record is None or record.status in TERMINAL:
        log.info("an edit of no live ticket's issue", ticket=key)
        return None
    if event.editor_is_bot:
        return event
    permission = await forge.permission(repo, event.editor)
    return event.model_copy(update={"permission": permission})


async def text_to_refresh(forge: Forge, key: str, command: ParsedCommand) -> IssueText | None:
    """The issue's title and body now, for `/ballet refresh` to adopt (the core decides
    whether it may); None for every other command, or when the issue is unreadable."""
    if not isinstance(command, Command) or command.verb != "refresh":
        return None
    repo, issue = split_key(key)
    try:
        details = await forge.get_issue(repo, issue)
    except (RateLimited, ForgeUnavailable):
        raise
    except ForgeError as exc:
        log.warning("issue unreadable for /ballet refresh", ticket=key, error=str(exc))
        return None  # the core refuses, saying the issue could not be read
    return IssueText(title=details.title, body=details.body)
