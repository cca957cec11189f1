"""Agent pools end to end: a repository's stage runs only on a worker of the pool
`.ballet.yml` names; a pool the deployment keeps for other repositories is a
config error with its line and column, on the issue and in a pull request's
config check; a session whose pool has no worker waits, says so on the ticket,
and past the stage's timeout asks a person; a ticket's next session runs on the
worker that ran its last one.

The pool tests with real workers start `ballet worker --pool …` processes, each
with a data directory (mirrors, workspaces) of its own, as on its own machine;
which worker ran a session is read from `ballet:session-worker:<job key>`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack, running_stack, worker_process
from ballet.demo.watch import View
from ballet.jobs.pools import session_worker
from ballet.jobs.reconciler import Reconciler
from ballet.queue import connect, sessions_queue
from ballet.wiring import build_services
from scenarios import e2e_redis, merged, new_repo, ticket, wait_until, waiting_for
from test_config_pr import Clone, config_check_on, the_check

pytestmark = pytest.mark.anyio

ON_GPU = "skills: [implementer], timeout_minutes: 5, pool: gpu,"
GPU_YML = demo.BALLET_YML.replace("skills: [implementer], timeout_minutes: 5,", ON_GPU)
assert GPU_YML != demo.BALLET_YML
GPU_LINE = next(i for i, line in enumerate(GPU_YML.splitlines(), 1) if "pool: gpu" in line)
GPU_COLUMN = GPU_YML.splitlines()[GPU_LINE - 1].index("pool: gpu") + len("pool: ") + 1
# A minute's timeout, so the reconciler (its clock moved on) finds it run out.
GPU_SHORT = GPU_YML.replace(ON_GPU, ON_GPU.replace("timeout_minutes: 5", "timeout_minutes: 1"))


async def workers_of(stack: Stack, view: View) -> list[tuple[str, str | None]]:
    """(stage, the worker that ran it) of each session of the ticket, in order."""
    assert view.record is not None
    redis = await connect(stack.settings.require_redis_url())
    try:
        return [
            (run.stage, await session_worker(redis, run.job_key))
            for run in view.record.history
            if run.job_key is not None
        ]
    finally:
        await redis.aclose()


def tracking_says(text: str) -> object:
    def done(view: View) -> bool:
        return any(text in c["body"] for c in view.state["comments"])

    return done


async def test_a_stage_runs_only_on_a_worker_of_its_pool(bare_stack: Stack, tmp_path: Path) -> None:
    stack = bare_stack
    repo = await new_repo(stack, "pooled", GPU_YML)
    with (
        worker_process(
            stack,
            tmp_path / "gpu.log",
            pools=("gpu",),
            data_dir=tmp_path / "gpu",
            worker_id="gpu-1",
        ),
        worker_process(stack, tmp_path / "cpu.log", data_dir=tmp_path / "cpu", worker_id="cpu-1"),
    ):
        number = await ticket(stack, repo)
        view = await wait_until(stack, repo, number, merged, timeout=300)
    ran = await workers_of(stack, view)
    assert ran == [("implement", "gpu-1"), ("review", "cpu-1"), ("verify", "cpu-1")]


async def test_a_tickets_next_session_runs_on_the_worker_of_its_last(
    bare_stack: Stack, tmp_path: Path
) -> None:
    stack = bare_stack
    repo = await new_repo(stack, "affinity")
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with (
        worker_process(stack, logs[0], data_dir=tmp_path / "a", worker_id="worker-a"),
        worker_process(stack, logs[1], data_dir=tmp_path / "b", worker_id="worker-b"),
    ):
        number = await ticket(stack, repo)
        view = await wait_until(stack, repo, number, merged, timeout=300)
    ran = await workers_of(stack, view)
    assert [stage for stage, _ in ran] == ["implement", "review", "verify"]
    first = ran[0][1]
    assert first in ("worker-a", "worker-b")
    assert [worker for _, worker in ran] == [first] * 3, ran
    # ...because each later launch reserved the session for it, not by chance.
    lines = [line for log in logs for line in log.read_text().splitlines()]
    for stage in ("review", "verify"):
        launches = [
            line for line in lines if "session launched" in line and f":{stage}:1:1" in line
        ]
        assert launches and all(f"preferred={first}" in line for line in launches), launches


async def test_a_pool_without_workers_waits_then_asks(stack: Stack) -> None:
    repo = await new_repo(stack, "no-gpu", GPU_SHORT)
    number = await ticket(stack, repo)
    view = await wait_until(
        stack, repo, number, tracking_says("**Waiting for a worker** of pool `gpu`"), timeout=60
    )
    record = view.record
    assert record is not None and record.status == "running"
    run = record.open_run
    assert run is not None and run.awaits_pool == "gpu" and run.job_key is not None
    redis = await connect(stack.settings.require_redis_url())
    try:
        assert await redis.zrange(sessions_queue("gpu"), 0, -1) == [run.job_key.encode()]
        # The reconciler's sweep, its clock past the stage's one-minute timeout.
        services = await build_services(stack.settings, redis)
        assert services.session_jobs is not None
        later = datetime.now(UTC) + timedelta(minutes=2)
        jobs = replace(services.session_jobs, clock=lambda: later)
        try:
            sweep = await Reconciler(
                jobs.redis, jobs.tickets, jobs.artifacts, clock=jobs.clock
            ).sweep()
        finally:
            await services.aclose()
    finally:
        await redis.aclose()
    assert f"{repo}#{number}" in sweep.ticked
    view = await wait_until(stack, repo, number, waiting_for("question"), timeout=60)
    assert view.record is not None and view.record.waiting is not None
    reason = view.record.waiting.reason
    assert "no worker of pool `gpu` was up to run the `implement` session" in reason
    assert "1-minute timeout" in reason
    assert "ballet:question" in view.issue(number)["labels"]
    question = [c["body"] for c in view.state["comments"] if "Ballet needs an answer" in c["body"]]
    assert question and f"@{demo.AUTHOR}" in question[0] and "pool `gpu`" in question[0]


async def test_a_pool_kept_for_other_repositories_is_a_config_error_with_its_position(
    redis_url: str, tmp_path: Path
) -> None:
    url = await e2e_redis(redis_url)
    async with running_stack(tmp_path, redis_url=url, pools="gpu=acme/ml;secure=acme/*") as stack:
        repo = await new_repo(stack, "web-app", GPU_YML)  # acme/web-app: not acme/ml
        number = await ticket(stack, repo)
        where = f".ballet.yml:{GPU_LINE}:{GPU_COLUMN}: this repository may not use pool `gpu`"
        view = await wait_until(stack, repo, number, tracking_says(where), timeout=60)
        notice = next(c["body"] for c in view.comments_on(number) if where in c["body"])
        assert "Ballet did not start this ticket" in notice and "acme/ml" not in notice
        assert view.record is None and view.state["pulls"] == []

        # A pull request that makes a valid file name the pool fails its config check there.
        fine = await new_repo(stack, "web-fine")
        clone = Clone(tmp_path / "clone", f"{stack.api_url}/{fine}.git", demo.AUTHOR)
        clone.git("checkout", "-q", "-b", "use-gpu")
        head = clone.commit_file(".ballet.yml", GPU_YML, "Implement on the GPU pool")
        clone.git("push", "-q", "origin", "use-gpu")
        async with stack.user(demo.AUTHOR) as user:
            response = await user.post(
                f"/repos/{fine}/pulls", json={"title": "GPU", "head": "use-gpu", "base": "main"}
            )
            response.raise_for_status()
            pr = response.json()["number"]
        view = await wait_until(stack, fine, pr, config_check_on(head), timeout=30)
        check = the_check(view, head)
        assert check["conclusion"] == "failure"
        [note] = check["annotations"]
        assert (note["start_line"], note["start_column"]) == (GPU_LINE, GPU_COLUMN)
        assert "may not use pool `gpu`" in note["message"]
