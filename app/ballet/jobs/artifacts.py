"""A ticket's session artifacts: the structured report and handoff of each session, in Redis.

The next session of the same ticket gets them in BALLET_CONTEXT (oldest
first), so stages hand each other artifacts and never a conversation. They
belong to one ticket only and are dropped when it ends (`forget`); the TTL,
renewed on every write, is a backstop for a ticket whose end went unseen.

One Redis list per ticket, `ballet:artifacts:<owner/repo#n>`, of JSON
documents. A session job retried after a crash may append its artifact
again; reading keeps the first one per job key.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from redis.asyncio import Redis

from ballet.core.report import Handoff, Report
from ballet.sessions import EarlierReport

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
            }
        )


class Artifacts:
    def __init__(self, redis: Redis, *, keep_seconds: int = KEEP_SECONDS) -> None:
        self._redis = redis
        self._keep = keep_seconds

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

    async def earlier_reports(self, ticket: str) -> tuple[EarlierReport, ...]:
        return tuple(a.as_earlier_report() for a in await self.of(ticket))

    async def forget(self, ticket: str) -> None:
        """Drop the ticket's artifacts: it ended, and they are never shared with another."""
        await self._redis.delete(PREFIX + ticket)
