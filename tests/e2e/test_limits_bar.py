"""The bar of resource limits: on one worker, a ticket whose agent allocates memory
without end and forks without end, beside a ticket whose agent sleeps 10 s and
commits. The hostile session ends `failed` with a resource reason within a minute
(its report comment and check run say which limit, its value and what to do), the
other ticket merges, the web app still answers and Valkey too, and nothing of
either session is left on the worker: no workspace, no mount, no cgroup.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import httpx
import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import running_stack
from ballet.demo.watch import View
from ballet.queue import connect
from ballet.sessions.confine.cgroups import PREFIX, detect
from ballet.sessions.disk import can_mount
from scenarios import e2e_redis, lands_alone, merged, new_repo, ticket, wait_until

pytestmark = pytest.mark.anyio

# Forks a child that allocates without end, allocates itself, and does it again.
HOG = """
import os
held = []
while True:
    try:
        if os.fork() == 0:
            hog = []
            while True:
                hog.append(b"x" * (1 << 20))
    except OSError:
        pass
    held.append(b"x" * (1 << 20))
"""
HOG_YML = demo.BALLET_YML.replace(".ballet/agent.py", ".ballet/hog.py")
REASONS = ("went over its memory limit", "went over its process limit")


def implement_failed(view: View) -> bool:
    record = view.record
    return record is not None and any(
        run.stage == "implement" and run.outcome == "failed" for run in record.history
    )


async def test_a_session_without_end_fails_at_its_limits_and_the_other_ticket_merges(
    redis_url: str, tmp_path: Path
) -> None:
    if detect() is None or not can_mount():
        pytest.skip("this machine gives the worker no writable cgroup or no right to mount")
    async with running_stack(
        tmp_path,
        redis_url=await e2e_redis(redis_url),
        session_max_memory="128MiB",
        session_max_processes=64,
        session_max_disk="256MiB",
    ) as stack:
        files = demo.repo_files(lands_alone(HOG_YML)) | {".ballet/hog.py": HOG}
        request = demo.new_repo_request("hog") | {"files": files}
        hog_repo = (await stack.create_repo(request))["full_name"]
        calm_repo = await new_repo(stack, "calm")
        started = time.monotonic()
        hog, calm = await asyncio.gather(
            ticket(stack, hog_repo),
            ticket(stack, calm_repo, directives="demo:sleep-implement=10"),
        )

        hogged = await wait_until(stack, hog_repo, hog, implement_failed, timeout=90)
        took = time.monotonic() - started
        assert took < 60, f"the hostile session took {took:.0f} s to end"
        (report,) = [c["body"] for c in hogged.state["comments"] if "Session failed" in c["body"]]
        assert any(reason in report for reason in REASONS), report
        assert "128 MiB" in report or "more than 64 processes" in report
        assert "BALLET_SESSION_MAX_" in report  # what to raise, if the work needs it
        headline = next(line for line in report.splitlines() if "Session failed" in line)
        print(f"\nthe hostile session ended in {took:.1f} s: {headline[:200]}")
        checks = [r for r in hogged.state["check_runs"] if r["name"] == "ballet/implement"]
        assert checks and checks[-1]["conclusion"] == "failure"
        check_summary = checks[-1]["output"]["summary"]
        assert any(reason in check_summary for reason in REASONS), check_summary

        calmed = await wait_until(stack, calm_repo, calm, merged, timeout=180)
        assert calmed.record is not None and calmed.record.status == "done"

        async with httpx.AsyncClient(base_url=stack.web_url, timeout=5) as web:
            assert (await web.get("/healthz")).status_code == 200
            metrics = (await web.get("/metrics")).text
        assert any(
            f'ballet_sessions_total{{adapter="command",result="{result}"}} 1.0' in metrics
            for result in ("memory", "processes")
        )
        valkey = await connect(stack.settings.redis_url.get_secret_value())  # type: ignore[union-attr]
        assert await valkey.ping()
        await valkey.aclose()

        # Nothing of either ticket's sessions is left on the worker.
        sessions = stack.settings.workspaces / "sessions"
        await wait_for_nothing_in(sessions)
        assert (
            str(stack.settings.workspaces.resolve()) not in Path("/proc/self/mountinfo").read_text()
        )
        tree = detect()
        assert tree is not None
        for hierarchy in tree.hierarchies:
            assert not list(hierarchy.base.glob(f"{PREFIX}{os.getpid()}-*"))


async def wait_for_nothing_in(directory: Path) -> None:
    """The last session's workspace goes once its result is delivered: a moment after."""
    for _ in range(100):
        if not directory.exists() or not any(directory.iterdir()):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"left in {directory}: {list(directory.iterdir())}")
