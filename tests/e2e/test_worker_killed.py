"""A worker SIGKILLed mid-session (an OOM kill, a node eviction), and then Redis
flushed during the next session, cost no person.

Web and sandbox run in this process; the workers are real `ballet worker`
processes on the same Valkey. The first is killed while the implement
session's agent runs; a second worker starts (what a supervisor does). Its
reconciler sees the session's heartbeat gone, the ticket runs implement again
as attempt 2. While the review session runs next, Valkey is flushed; the
record comes back from the tracking comment and the review's result is kept.
The ticket merges with one pull request, one report per stage run and one
tracking comment, and nobody typed a command.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from ballet.demo.stack import Stack, running_stack, worker_process
from ballet.demo.watch import View
from ballet.queue import connect
from process_namespaces import namespace_ends
from scenarios import (
    BARE_REDIS_DB,
    assert_merged_cleanly,
    e2e_redis,
    markers,
    merged,
    new_repo,
    ticket,
    wait_until,
)
from worker_processes import files_named

pytestmark = pytest.mark.anyio


@pytest.fixture
async def bare_stack(redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    """The stack without its in-process worker, its workers' sessions beating every
    2 s (alive 8 s) and their reconciler sweeping every 2 s: the dead worker's session
    is found crashed within ~10 s of the kill, not the defaults' ~70 s."""
    url = await e2e_redis(redis_url, BARE_REDIS_DB)
    async with running_stack(
        tmp_path, redis_url=url, worker=False, reconcile_seconds=2, session_heartbeat_seconds=2.0
    ) as running:
        yield running


async def hanging_agent(data_dir: Path, worker: subprocess.Popen[bytes], log: Path) -> str:
    """The pid namespace of the implement session, once its agent runs (and hangs)."""
    for _ in range(1200):
        found = files_named(data_dir, "hanging.ns")
        if found and found[0].read_text():
            return found[0].read_text()
        assert worker.poll() is None, log.read_text()[-3000:]
        await asyncio.sleep(0.1)
    raise AssertionError(f"the implement session never started:\n{log.read_text()[-3000:]}")


def reviewing(view: View) -> bool:
    record = view.record
    return record is not None and record.status == "running" and record.stage == "review"


async def test_a_worker_killed_mid_session_is_recovered_without_a_person(
    bare_stack: Stack, tmp_path: Path
) -> None:
    stack = bare_stack
    repo = await new_repo(stack, "killed")
    first_log, second_log = tmp_path / "worker-1.log", tmp_path / "worker-2.log"
    with worker_process(stack, first_log) as first:
        number = await ticket(
            stack, repo, directives="demo:hang-implement=600\ndemo:sleep-review=8"
        )
        agent = await hanging_agent(stack.settings.data_dir, first, first_log)
        first.send_signal(signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
    killed = time.monotonic()
    # The sandbox dies with its worker (bubblewrap's --die-with-parent): no agent
    # of the dead worker goes on writing to the clone or pushing.
    assert namespace_ends(agent)

    with worker_process(stack, second_log):
        # ...and Redis loses everything while the next session (review) runs.
        await wait_until(stack, repo, number, reviewing, timeout=300)
        await asyncio.sleep(2)  # the review session is under way
        pool = await connect(stack.settings.require_redis_url())
        await pool.flushdb()
        await pool.aclose()
        view = await wait_until(stack, repo, number, merged, timeout=300)
    recovered = time.monotonic() - killed

    record = view.record
    assert record is not None
    runs = [(r.stage, r.attempt, r.outcome) for r in record.history]
    assert runs[:2] == [("implement", 1, "crashed"), ("implement", 2, "done")], runs
    assert [r[0] for r in runs[2:]] == ["review", "verify", "integrate"], runs
    assert "no heartbeat since" in record.history[0].summary
    await assert_merged_cleanly(stack, view, repo, number)  # one tracking comment, reports
    assert len(view.state["pulls"]) == 1
    assert not record.questions
    # Nobody typed a command: every comment is Ballet's own.
    people = [c for c in view.state["comments"] if not c["user"].endswith("[bot]")]
    assert people == []
    assert sum(":report:" in m for m in markers(view)) == len(record.history)
    print(f"\nrecovered and merged {recovered:.0f} s after the kill")
