"""Ballet's pages as GitHub links them: a check run's `details_url` is its
session's page, and its output `text` the end of that session's log, so people
see what the agent did without leaving GitHub; the tracking comment links the
ticket's page. No GitHub write of its own: the check runs and the tracking
comment are written anyway.
"""

from __future__ import annotations

import re

import structlog

from ballet.core.terminal_text import visible_controls
from ballet.sessionlog.store import SessionLogs

log = structlog.get_logger("ballet.tickets.pages")

# GitHub's limit on a check run's output.text is 65,535 characters; the fence and
# the note about what was cut fit in the margin.
TEXT_MAX = 60_000
_FENCE = re.compile(r"`{3,}")


class PageLinks:
    def __init__(self, public_url: str, logs: SessionLogs | None = None) -> None:
        self._base = public_url.rstrip("/")
        self._logs = logs

    def url(self, path: str) -> str:
        return self._base + path

    async def log_end(self, job_key: str) -> str:
        """The end of the session's finished log as check-run text, or "" when there
        is none (the store is not configured, unreachable, or has no such log)."""
        if self._logs is None:
            return ""
        try:
            finished = await self._logs.read(job_key)
        except Exception as exc:  # the check run is written all the same, without its log
            log.warning("session log unread for its check run", job_key=job_key, error=str(exc))
            return ""
        if finished is None or not finished.log:
            return ""
        return fenced(finished.log.decode("utf-8", errors="backslashreplace"))


def fenced(text: str) -> str:
    """The last TEXT_MAX characters of `text`, from a line start, in a code fence
    no line of the log can close; its terminal controls shown as `\\xNN`, since the
    check run's text is read in terminals too (`gh`, the API)."""
    text = visible_controls(text)
    cut = len(text) > TEXT_MAX
    if cut:
        text = text[-TEXT_MAX:]
        text = text[text.find("\n") + 1 :] if "\n" in text else text
    longest = max((len(m) for m in _FENCE.findall(text)), default=2)
    fence = "`" * max(3, longest + 1)
    note = "The end of the session's log (the whole log is on Ballet's page):\n\n" if cut else ""
    return f"{note}{fence}text\n{text.rstrip()}\n{fence}"


def with_ticket_link(body: str, url: str) -> str:
    """The tracking comment with a link to the ticket's page under its heading."""
    head, sep, rest = body.partition("\n")
    return f"{head}\n\n[Watch this ticket on Ballet]({url}){sep}{rest}"
