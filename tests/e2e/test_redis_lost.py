"""Redis flushed while a session runs: the ticket completes from what GitHub holds.

The implement session is running when every key in Valkey goes (a restart
without persistence does the same). The session's own worker is alive, so
its result must not be lost or run again; the ticket's record comes back from
its tracking comment; the ticket merges with one pull request, one tracking
comment, one report per stage run and one check run per name and head.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from ballet.demo.stack import Stack
from ballet.queue import connect
from scenarios import assert_merged_cleanly, merged, new_repo, ticket, wait_until
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
    url = stack.settings.redis_url
    assert url is not None
    pool = await connect(url.get_secret_value())
    await pool.flushdb()
    await pool.aclose()

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
