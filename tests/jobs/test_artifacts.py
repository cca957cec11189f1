"""A ticket's session artifacts in Redis: oldest first, one per session, gone with the ticket."""

from __future__ import annotations

import pytest
from arq.connections import ArqRedis
from ballet.core.report import Handoff, Report
from ballet.jobs.artifacts import PREFIX, Artifact, Artifacts

pytestmark = pytest.mark.anyio


def artifact(job_key: str, stage: str, summary: str, phase: str | None = None) -> Artifact:
    return Artifact(
        job_key=job_key,
        stage=stage,
        iteration=1,
        phase=phase,
        report=Report(outcome="done", summary=summary),
        handoff=Handoff(summary=f"handoff of {summary}") if phase else None,
    )


async def test_artifacts_are_kept_per_ticket_oldest_first_once_per_session(
    redis: ArqRedis,
) -> None:
    artifacts = Artifacts(redis, keep_seconds=3600)
    await artifacts.add("octo/demo#7", artifact("a", "implement", "first", phase="plan"))
    await artifacts.add("octo/demo#7", artifact("b", "review", "second"))
    await artifacts.add("octo/demo#7", artifact("a", "implement", "first, retried"))
    await artifacts.add("octo/demo#8", artifact("c", "implement", "another ticket"))

    earlier = await artifacts.earlier_reports("octo/demo#7")

    assert [(r.stage, r.phase, r.report.summary) for r in earlier] == [
        ("implement", "plan", "first"),
        ("review", None, "second"),
    ]
    stored = await artifacts.of("octo/demo#7")
    assert stored[0].handoff == Handoff(summary="handoff of first")
    assert 0 < await redis.ttl(PREFIX + "octo/demo#7") <= 3600

    await artifacts.forget("octo/demo#7")
    assert await artifacts.of("octo/demo#7") == ()
    assert len(await artifacts.of("octo/demo#8")) == 1
