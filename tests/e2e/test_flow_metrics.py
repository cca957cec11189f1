"""The flow figures of a ticket, as an operator sees them: GET /metrics and `ballet stats`.

One ticket is sent back once by Review, asks a question, is answered and is
merged in its second iteration, every session reporting metered usage.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import httpx
import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from prometheus_client.parser import text_string_to_metric_families
from scenarios import comment, merged, new_repo, outcomes, ticket, wait_until, waiting_for

pytestmark = pytest.mark.anyio

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(stack: Stack) -> Samples:
    async with httpx.AsyncClient(base_url=stack.web_url) as client:
        response = await client.get("/metrics")
    response.raise_for_status()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


async def stats(stack: Stack, *args: str) -> str:
    """`ballet stats ARGS` in a process of its own, given the stack's REDIS_URL."""
    env = {**os.environ, "REDIS_URL": stack.settings.require_redis_url()}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ballet", "stats", *args,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


def total(samples: Samples, name: str) -> float:
    return sum(value for (sample, _), value in samples.items() if sample == name)


async def test_a_reworked_ticket_shows_in_metrics_and_stats(stack: Stack, redis_url: str) -> None:
    before = await scrape(stack)
    repo = await new_repo(stack, "flow-metrics")
    directives = "demo:review=changes_requested@1\ndemo:implement=question@2\ndemo:usage=yes"
    number = await ticket(stack, repo, directives=directives)
    await wait_until(stack, repo, number, waiting_for("question"), timeout=120)
    await comment(stack, repo, number, demo.AUTHOR, "/ballet answer Round half up.")
    view = await wait_until(stack, repo, number, merged, timeout=120)

    runs = outcomes(view)
    assert runs[-4:] == [
        ("implement", 2, "done"),
        ("review", 2, "approve"),
        ("verify", 2, "pass"),
        ("integrate", 2, "merged"),
    ]
    after = await scrape(stack)
    finished = "ballet_stages_finished_total"
    assert delta(before, after, finished, stage="review", outcome="changes_requested") == 1
    assert delta(before, after, finished, stage="review", outcome="approve") == 1
    assert delta(before, after, finished, stage="verify", outcome="pass") == 1
    assert delta(before, after, finished, stage="integrate", outcome="merged") == 1
    assert total(after, finished) - total(before, finished) == len(runs)
    # Every agent session reported demo.agent.USAGE; integrate is no session.
    sessions = sum(1 for stage, _, _ in runs if stage != "integrate")
    tokens = "ballet_usage_tokens_total"
    assert delta(before, after, tokens, direction="input") == 1000 * sessions
    assert delta(before, after, tokens, direction="output") == 250 * sessions
    assert delta(before, after, "ballet_usage_cost_usd_total") == pytest.approx(0.5 * sessions)
    assert delta(before, after, "ballet_questions_total") == 1
    assert delta(before, after, "ballet_flow_waits_total", reason="question") == 1
    iterations = "ballet_flow_iterations"
    assert delta(before, after, f"{iterations}_count", status="done") == 1
    assert delta(before, after, f"{iterations}_sum", status="done") == 2
    assert delta(before, after, f"{iterations}_bucket", status="done", le="1.0") == 0
    assert delta(before, after, f"{iterations}_bucket", status="done", le="2.0") == 1
    lead = "ballet_flow_lead_time_seconds"
    assert delta(before, after, f"{lead}_count", status="done") == 1
    assert delta(before, after, f"{lead}_sum", status="done") > 0

    # `ballet stats` reads the same records from Redis, as an operator would.
    rows = {row["stage"]: row for row in json.loads(await stats(stack, "--repo", repo, "--json"))}
    assert rows["review"]["runs"] == 2
    assert rows["review"]["outcomes"] == {"approve": 1, "changes_requested": 1}
    assert rows["review"]["rework_rate"] == 0.5
    assert rows["verify"]["rework_rate"] == 0.0
    assert rows["integrate"]["outcomes"] == {"merged": 1}
    assert rows["implement"]["runs"] == sum(1 for stage, _, _ in runs if stage == "implement")
    assert all(row["mean_seconds"] >= 0 for row in rows.values())
    table = (await stats(stack, "--repo", repo, "--since", "1d")).splitlines()
    assert table[0].split()[:4] == ["stage", "runs", "mean", "rework"]
    assert any(line.startswith("review ") and "50%" in line for line in table)
    future = await stats(stack, "--repo", repo, "--since", "2999-01-01")
    assert "no finished stage runs" in future
