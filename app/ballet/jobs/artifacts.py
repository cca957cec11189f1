"""A ticket's session artifacts: the structured report and handoff of each session, in Redis.

The next session of the same ticket gets them in BALLET_CONTEXT (oldest
first), so stages hand each other artifacts and never a conversation. They
belong to one ticket only and are dropped when it ends (`forget`); the TTL,
renewed on every write, is a backstop for a ticket whose end went unseen.

One Redis list per ticket, `ballet:artifacts:<owner/repo#n>`, of JSON
documents. A session job retried after a crash may append its artifact
again; reading keeps the first one per job key.

Redis is not their only home: each session's report comment on the pull
request carries its report and handoff in a hidden block. Given the ticket's
record, `earlier_reports` reads back from there what Redis lost of the
sessions the record says finished, and keeps it again (`tickets.report_comments`).
"""

from __future__ import annotations

import structlog
from pydantic import BaseModel, ConfigDict
from redis.asyncio import Redis

from ballet.core.record import Record
from ballet.core.report import Handoff, Report
from ballet.core.report_block import ReportBlock
from ballet.sessions import EarlierReport
from ballet.tickets.report_comments import ReportComments, reported_sessions

log = structlog.get_logger("ballet.jobs.artifacts")

PREFIX = "ballet:artifacts:"
KEEP_SECONDS = 60 * 24 * 3600  # far beyond any live ticket; renewed on every write


class Artifact(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    job_key: str
    stage: str  # the stage id, or `signoff-<role>` for a sign-off session
    iteration: int
    phase: str | None = None
    report: Report
    handoff: Handoff | None = None

    def as_earlier_report(self) -> EarlierReport:
        return EarlierReport.model_validate(
            {
                "stage": self.stage,
                "iteration": self.iteration,
                "phase": self.phase,
                "report": self.report,
                "handoff": self.handoff,
            }
        )

    @classmethod
    def of_block(cls, block: ReportBlock) -> Artifact:
        """The artifact a report comment's block holds."""
        return cls(
            job_key=block.job_key,
            stage=block.stage,
            iteration=block.iteration,
            phase=block.phase,
            report=block.report,
            handoff=block.handoff,
        )


class Artifacts:
    def __init__(
        self,
        redis: Redis,
        *,
        keep_seconds: int = KEEP_SECONDS,
        reports: ReportComments | None = None,  # None: what Redis lost stays lost
    ) -> None:
        self._redis = redis
        self._keep = keep_seconds
        self._reports = reports

    async def add(self, ticket: str, artifact: Artifact) -> None:
        key = PREFIX + ticket
        async with self._redis.pipeline(transaction=True) as tx:
            tx.rpush(key, artifact.model_dump_json())
            tx.expire(key, self._keep)
            await tx.execute()

    async def of(self, ticket: str) -> tuple[Artifact, ...]:
        """The ticket's artifacts, oldest first, one per session."""
        raw: list[bytes] = await self._redis.lrange(PREFIX + ticket, 0, -1)  # type: ignore[misc]
        seen: set[str] = set()
        artifacts = []
        for item in raw:
            artifact = Artifact.model_validate_json(item)
            if artifact.job_key not in seen:
                seen.add(artifact.job_key)
                artifacts.append(artifact)
        return tuple(artifacts)

    async def earlier_reports(
        self,
        ticket: str,
        record: Record | None = None,
        stored: tuple[Artifact, ...] | None = None,
    ) -> tuple[EarlierReport, ...]:
        """The reports and handoffs the ticket's next session gets, oldest first.

        `stored`: the ticket's artifacts as just read (`of`), so a caller reading
        them alongside the record pays no second round trip. With the `record`,
        the sessions it says finished but Redis no longer holds are read back
        from their report comments."""
        artifacts = await self.of(ticket) if stored is None else stored
        if record is not None:
            artifacts = await self._completed(ticket, record, artifacts)
        return tuple(a.as_earlier_report() for a in artifacts)

    async def _completed(
        self, ticket: str, record: Record, stored: tuple[Artifact, ...]
    ) -> tuple[Artifact, ...]:
        # Not only a missing list: a flush mid-session leaves a list holding that
        # session's artifact alone, written after the flush, and none before it.
        have = {a.job_key for a in stored}
        lost = [run for run in reported_sessions(record) if run.job_key not in have]
        if not lost or self._reports is None:
            return stored
        found = await self._reports.read(record, lost)
        if not found:
            return stored
        by_key = {a.job_key: a for a in stored}
        by_key.update((key, Artifact.of_block(block)) for key, block in found.items())
        # In the record's order, which is the order the sessions finished in; an
        # artifact the record does not name (a stale session's) keeps its place after.
        order = [run.job_key for run in record.history if run.job_key is not None]
        kept = [a.job_key for a in stored]
        merged = tuple(by_key[key] for key in dict.fromkeys([*order, *kept]) if key in by_key)
        await self._replace(ticket, merged)
        log.info("artifacts rebuilt from report comments", ticket=ticket, rebuilt=len(found))
        return merged

    async def _replace(self, ticket: str, artifacts: tuple[Artifact, ...]) -> None:
        # Only a stale session of the same ticket could append meanwhile, and its
        # artifact is one no later session should be given anyway.
        key = PREFIX + ticket
        async with self._redis.pipeline(transaction=True) as tx:
            tx.delete(key)
            tx.rpush(key, *(a.model_dump_json() for a in artifacts))
            tx.expire(key, self._keep)
            await tx.execute()

    async def forget(self, ticket: str) -> None:
        """Drop the ticket's artifacts: it ended, and they are never shared with another."""
        await self._redis.delete(PREFIX + ticket)
