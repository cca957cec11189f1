"""A session's result carries what its model gateway metered and the cap that refused
a request: the SessionFinished the job queues says both, and the engine turns the cap
into a question naming it (jobs/session_results.py, core/budgets.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from arq.connections import ArqRedis
from ballet.core.report import Report, Usage
from ballet.core.spend import Cap, Spend
from ballet.jobs.services import Services
from ballet.jobs.session_results import deliver_result
from ballet.sessions import SessionResult
from ballet.settings import Settings
from jobs_kit import REPO, EngineTickets, agent_runtime
from jobs_running import queued_finish, run_events

pytestmark = pytest.mark.anyio

METERED = Spend(requests=4, input_tokens=900, cache_read_tokens=100, output_tokens=50, cost_usd=2.4)
CAP = Cap(scope="ticket", limit_usd=2, spent_usd=2.4)


async def test_the_gateway_spend_and_cap_reach_the_ticket(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    agent_script: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    result = SessionResult(
        report=Report(outcome="budget", summary=f"Ballet stopped the session: {CAP.says()}"),
        head_sha=None,
        usage=Usage(input_tokens=1000, output_tokens=50, cost_usd=2.4),
        duration_seconds=3.0,
        handoff=None,
        output_tail="",
        spend=METERED,
        cap_reached=CAP,
    )
    assert services.session_jobs is not None
    await deliver_result(services.session_jobs, start.spec, result, applies=False)

    event = await queued_finish(redis, start.spec.job_key)
    assert event is not None and (event.spend, event.cap_reached) == (METERED, CAP)
    await run_events(settings, services)
    record = tickets.records[f"{REPO}#7"]
    assert record.status == "waiting" and record.waiting is not None
    assert "this ticket's cost cap ($2.00) is reached: $2.40 spent" in record.waiting.reason
    assert "`/ballet budget +5`" in record.waiting.reason
    assert record.cost_used == 2.4 and record.history[0].spend == METERED
