"""A ticket's session reports and handoffs, read back from its report comments.

Redis keeps each session's report and handoff for the ticket's next sessions
(`ballet.jobs.artifacts`); each session's report comment on GitHub carries
them too, in a hidden block (`ballet.core.report_block`). When Redis lost them
(a flush, a restart without persistence), they are read back from there: the
record, itself rebuilt from its tracking comment, says which sessions finished
and which comment holds each one's report (`StageRun.report_ref`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import structlog

from ballet.core.crashes import CRASHED
from ballet.core.record import Record, StageRun
from ballet.core.render import marker_for
from ballet.core.report_block import ReportBlock, ReportBlockError, decode_block
from ballet.github.forge import Forge, NotFound

log = structlog.get_logger("ballet.tickets.report_comments")


def reported_sessions(record: Record) -> tuple[StageRun, ...]:
    """The record's finished sessions that handed a report on, oldest first.

    A crashed run is left out: its report is Ballet's own, written when the
    session's worker died, and the session handed nothing on."""
    return tuple(
        run
        for run in record.history
        if run.job_key and run.report_ref and run.end is not None and run.outcome != CRASHED
    )


class ReportComments:
    """Reads report blocks from a ticket's comments through the forge of its repository."""

    def __init__(
        self, forges: Callable[[str], Awaitable[Forge]], *, author: str | None = None
    ) -> None:
        self._forges = forges
        # Anyone may comment on a public pull request, and a marker is easy to copy:
        # only the App's own comments are read back as reports (None: trust any).
        self._author = author.casefold() if author else None

    async def read(self, record: Record, runs: Sequence[StageRun]) -> dict[str, ReportBlock]:
        """The report blocks of `runs` by job key. A run whose comment is gone, or was
        edited so its block is gone or damaged, is left out and logged: the next
        session then goes without that one report rather than not at all."""
        wanted = {marker_for(run.report_ref): run for run in runs if run.report_ref}
        if not wanted:
            return {}
        repo = record.ticket.repo
        forge = await self._forges(repo)
        bodies: dict[str, str] = {}
        # Reports go on the pull request once it exists, on the issue before (`Tx.number`).
        for number in dict.fromkeys(n for n in (record.pr_number, record.ticket.number) if n):
            if len(bodies) == len(wanted):
                break
            try:
                comments = await forge.list_comments(repo, number)
            except NotFound:
                continue
            for comment in comments:
                if self._author is not None and comment.author.casefold() != self._author:
                    continue
                for marker in wanted.keys() - bodies.keys():
                    if marker in comment.body:
                        bodies[marker] = comment.body  # the first one, as the interpreter does
        found: dict[str, ReportBlock] = {}
        for marker, run in wanted.items():
            block = _block_of(record.key, run, bodies.get(marker))
            if block is not None and run.job_key is not None:
                found[run.job_key] = block
        return found


def _block_of(ticket: str, run: StageRun, body: str | None) -> ReportBlock | None:
    where = {"ticket": ticket, "job_key": run.job_key, "report": run.report_ref}
    if body is None:
        log.warning("report comment not found; its report is not rebuilt", **where)
        return None
    try:
        block = decode_block(body)
    except ReportBlockError as exc:
        log.warning("report comment unreadable; its report is not rebuilt", error=str(exc), **where)
        return None
    if block.job_key != run.job_key:
        log.warning(
            "report comment names another session; its report is not rebuilt",
            found=block.job_key,
            **where,
        )
        return None
    return block
