"""Redis flushed while a session runs: the ticket completes from what GitHub holds.

The implement session is running when every key in Valkey goes (a restart
without persistence does the same). The session's own worker is alive, so
its result must not be lost or run again; the ticket's record comes back from
its tracking comment; the ticket merges with one pull request, one tracking
comment, one report per stage run and one check run per name and head.

The sessions after the flush are still given every earlier session's report
and handoff: read back from the report comments' hidden blocks.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ballet.core.report_block import BLOCK_START, ReportBlock, decode_block
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import (
    assert_merged_cleanly,
    flush,
    lands_alone,
    merged,
    new_repo,
    outcomes,
    ticket,
    wait_until,
)
from seen_agent import SEEN
from worker_processes import files_named

pytestmark = pytest.mark.anyio


async def session_running(data_dir: Path) -> None:
    for _ in range(1200):
        if files_named(data_dir, "hanging.ns"):
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the implement session never started")


async def test_redis_flushed_mid_session_loses_nothing_and_doubles_nothing(
    stack: Stack,
) -> None:
    repo = await new_repo(stack, "amnesia")
    number = await ticket(stack, repo, directives="demo:hang-implement=6")
    await session_running(stack.settings.data_dir)
    await asyncio.sleep(1.0)  # the transition's tracking comment is written through
    await flush(stack)

    view = await wait_until(stack, repo, number, merged, timeout=240)

    record = view.record
    assert record is not None
    runs = [(r.stage, r.attempt, r.outcome) for r in record.history]
    assert runs[0] == ("implement", 1, "done"), runs  # the running session's result kept
    assert len(view.state["pulls"]) == 1
    await assert_merged_cleanly(stack, view, repo, number)
    ours = [
        (r["name"], r["head_sha"])
        for r in view.state["check_runs"]
        if r["name"].startswith("ballet/")
    ]
    doubled = [k for k, n in Counter(ours).items() if n > 1]
    assert doubled == [], doubled


# The demo pipeline with a phased implement (so sessions hand on handoffs), every
# session run by the agent that writes down what it was given.
SEEING = demo.BALLET_YML.replace(
    "command: [python3, .ballet/agent.py]", "command: [python3, .ballet/seen_agent.py]"
).replace(
    "skills: [implementer], timeout_minutes: 5,",
    "skills: [implementer], timeout_minutes: 5, phases: [plan, implement],",
)


def report_blocks(view: View) -> dict[tuple[str, str | None], ReportBlock]:
    """Each session's report block on the ticket, by (stage, phase)."""
    blocks = (decode_block(c["body"]) for c in view.state["comments"] if BLOCK_START in c["body"])
    return {(b.stage, b.phase): b for b in blocks}


def seen_in(block: ReportBlock) -> list[dict[str, Any]]:
    """What the session's process was given of the earlier sessions (`seen_agent.py`)."""
    line = block.report.details.splitlines()[0]
    assert line.startswith(SEEN), line
    seen: list[dict[str, Any]] = json.loads(line.removeprefix(SEEN))
    return seen


async def test_sessions_after_a_flush_are_given_every_earlier_report_and_handoff(
    stack: Stack,
) -> None:
    request = demo.new_repo_request("recall", ballet_yml=lands_alone(SEEING))
    files = request["files"]
    assert isinstance(files, dict)
    files[".ballet/seen_agent.py"] = (Path(__file__).parent / "seen_agent.py").read_text()
    repo = (await stack.create_repo(request))["full_name"]
    number = await ticket(stack, repo, directives="demo:hang-review=6")
    # Both implement phases have reported; Valkey goes while review runs, so the
    # list of artifacts review writes afterwards holds review's alone.
    await session_running(stack.settings.data_dir)
    await asyncio.sleep(1.0)
    await flush(stack)

    view = await wait_until(stack, repo, number, merged, timeout=240)

    assert outcomes(view) == [
        ("implement", 1, "done"),
        ("implement", 1, "done"),
        ("review", 1, "approve"),
        ("verify", 1, "pass"),
        ("integrate", 1, "merged"),
    ]
    blocks = report_blocks(view)
    plan, implement = blocks[("implement", "plan")], blocks[("implement", "implement")]
    assert plan.handoff is not None and implement.handoff is not None
    before_flush = seen_in(blocks[("review", None)])  # review read them from Redis
    assert before_flush == [
        {
            "stage": "implement",
            "phase": phase.phase,
            "summary": phase.report.summary,
            "handoff": phase.handoff.summary,
            "in_prompt": True,
        }
        for phase in (plan, implement)
        if phase.handoff is not None
    ]
    assert before_flush[0]["handoff"] == "plan done; before: -"
    # Verify ran after the flush: the same reports and handoffs, and review's, in order.
    after_flush = seen_in(blocks[("verify", None)])
    assert after_flush[:2] == before_flush
    assert [(s["stage"], s["phase"], s["handoff"], s["in_prompt"]) for s in after_flush[2:]] == [
        ("review", None, None, True)
    ]
    assert after_flush[2]["summary"] == blocks[("review", None)].report.summary
    await assert_merged_cleanly(stack, view, repo, number)
