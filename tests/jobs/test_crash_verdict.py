"""The reconciler's crash verdict against a session whose job starts, or whose worker
stalls, at the worst moment: real Valkey, real arq workers, the real reconciler."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from arq.connections import ArqRedis
from arq.jobs import Job, JobStatus
from ballet.core.events import SessionCrashed, SessionFinished
from ballet.core.spend import Spend
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.jobs.artifacts import Artifacts
from ballet.jobs.heartbeats import heartbeat_key
from ballet.jobs.reconciler import Reconciler
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.stage_sessions import ArqSessionLauncher
from ballet.queue import SESSIONS_QUEUE, connect
from ballet.settings import Settings
from ballet.spend_ledger import SpendLedger
from ballet.tickets.source import GitHubTicketSource
from ballet.tickets.store import RecordStore
from fake_github import API, APP_ID
from git_repos import git
from jobs_kit import REPO, EngineTickets, agent_runtime
from jobs_running import eventually, queued_end, sessions_spec, worker_group

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)  # long after the run began (T0)
TICKET = f"{REPO}#7"


class Tripwire(ArqRedis):
    """The reconciler's Redis, which runs `then` once, right after the first round
    trip that read a session's heartbeat key: whatever the reconciler reads after
    that, it reads after `then` happened."""

    then: Callable[[], Awaitable[None]] | None = None

    async def _trip(self, args: list[Any]) -> None:
        heartbeat = b"ballet:heartbeat:"
        touched = any(
            isinstance(a, bytes | str) and heartbeat in (a if isinstance(a, bytes) else a.encode())
            for a in args
        )
        if touched and self.then is not None:
            then, self.then = self.then, None
            await then()

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        result = await super().execute_command(*args, **options)
        await self._trip(list(args))
        return result

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        execute = pipe.execute

        async def execute_then_trip(raise_on_error: bool = True) -> Any:
            sent = [a for args, _ in pipe.command_stack for a in args]
            result = await execute(raise_on_error)
            await self._trip(sent)
            return result

        pipe.execute = execute_then_trip  # type: ignore[method-assign]
        return pipe


async def test_a_session_that_starts_while_the_reconciler_looks_is_no_crash(
    settings: Settings,
    services: Services,
    session_jobs: SessionJobs,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    observed: Path,
) -> None:
    """A session queued for long (all slots busy) whose job starts just after the
    reconciler found no heartbeat: it must not read the first beat that follows as
    the last beat of a session that has gone silent."""
    pids = observed / "agent.pids"
    start = await tickets.request(agent_runtime(agent_script, str(pids)))
    job_key = start.spec.job_key
    await launcher.launch(start)
    group = worker_group(settings, services, sessions_spec(settings), burst=False)
    serving: list[asyncio.Task[None]] = []

    async def a_slot_frees_and_the_job_starts() -> None:
        serving.append(asyncio.create_task(group.run()))

        async def beating() -> bool:
            return bool(await redis.exists(heartbeat_key(job_key))) and pids.exists()

        await eventually(beating, "the session starting")

    tripwire = Tripwire(connection_pool=redis.connection_pool)
    tripwire.then = a_slot_frees_and_the_job_starts
    try:
        sweep = await Reconciler(
            tripwire, session_jobs.tickets, session_jobs.artifacts, clock=lambda: NOW
        ).sweep()
        assert tripwire.then is None  # the job did start mid-look
        assert sweep.crashed == ()
        assert await queued_end(redis, job_key) is None
    finally:
        group.stop()
        await asyncio.gather(*serving)


# Starts, says so, and waits for the test's word before it commits and reports.
GATED_AGENT = r"""
import json, os, subprocess, sys, time
from pathlib import Path
gate = Path(sys.argv[1])
(gate.parent / "started").write_text("")
while not gate.exists():
    time.sleep(0.02)
Path("stale.txt").write_text("the replaced attempt was here\n")
subprocess.run(["git", "add", "-A"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "stale work"], check=True)
Path(os.environ["BALLET_REPORT"]).write_text(json.dumps({"outcome": "done", "summary": "late"}))
"""


def judge_in_another_thread(
    url: str, job_key: str, make: Callable[[ArqRedis], Reconciler]
) -> tuple[threading.Event, threading.Event, list[Any]]:
    """A reconciler on a loop and Redis client of its own, as on another worker: once
    `frozen` is set it waits out the session's heartbeat, sweeps, then sets `judged`."""
    frozen, judged = threading.Event(), threading.Event()
    swept: list[Any] = []

    async def judge() -> None:
        redis = await connect(url)
        try:
            while await redis.exists(heartbeat_key(job_key)):
                await asyncio.sleep(0.05)
            swept.append(await make(redis).sweep())
        finally:
            await redis.aclose()

    def run() -> None:
        frozen.wait(timeout=60)
        try:
            asyncio.run(judge())
        except BaseException as exc:
            swept.append(exc)
        finally:
            judged.set()

    threading.Thread(target=run, daemon=True).start()
    return frozen, judged, swept


async def test_a_worker_stalled_past_its_heartbeat_is_replaced_and_its_late_work_dropped(
    settings: Settings,
    services: Services,
    session_jobs: SessionJobs,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    observed: Path,
    origin: Path,
    app_private_key: str,
) -> None:
    """A worker's event loop held past the heartbeat's life (a machine at load 15,
    a SIGSTOP): the reconciler on another worker rightly judges its session crashed
    and the stage runs again. When the stalled worker wakes, its session must not push,
    keep an artifact or report: the attempt that replaced it is the only one."""
    gated = agent_script.parent / "gated.py"
    gated.write_text(GATED_AGENT)
    gate = observed / "go"
    start = await tickets.request(agent_runtime(gated, str(gate)))
    job_key = start.spec.job_key
    await launcher.launch(start)
    group = worker_group(settings, services, sessions_spec(settings), burst=False)
    serving = asyncio.create_task(group.run())

    def other_workers_reconciler(redis_b: ArqRedis) -> Reconciler:
        forges = GitHubApp(
            GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API),
            redis_b,
        )
        source = GitHubTicketSource(RecordStore(redis_b), forges.for_installation)
        return Reconciler(redis_b, source, Artifacts(redis_b), clock=lambda: NOW)

    try:

        async def agent_runs() -> bool:
            return (observed / "started").exists() and bool(
                await redis.exists(heartbeat_key(job_key))
            )

        await eventually(agent_runs, "the session starting")
        # What the session's gateway metered before its worker went silent.
        metered = Spend(requests=2, input_tokens=3_000, output_tokens=200, cost_usd=0.42)
        await SpendLedger(redis).add(
            repo=start.repo,
            installation_id=None,
            provider="anthropic",
            model="claude-sonnet-4-5",
            spend=metered,
            at=NOW,
            session=job_key,
        )
        url = settings.require_redis_url()
        frozen, judged, swept = judge_in_another_thread(url, job_key, other_workers_reconciler)

        def stall() -> None:  # this worker's whole event loop, held until the verdict
            frozen.set()
            judged.wait(timeout=60)

        asyncio.get_running_loop().call_soon(stall)
        await asyncio.sleep(0)
        (sweep,) = swept
        assert not isinstance(sweep, BaseException), sweep
        assert sweep.crashed == (job_key,)  # the verdict: the worker was silent too long
        crash = await queued_end(redis, job_key)
        assert isinstance(crash, SessionCrashed)
        assert crash.spend == metered  # its ticket pays for it

        gate.write_text("")  # the agent finishes its (now stale) work
        job = Job(job_key, redis, _queue_name=SESSIONS_QUEUE)

        async def job_ended() -> bool:
            return await job.status() == JobStatus.complete

        await eventually(job_ended, "the stale session's job ending", limit=60)
        assert await job.result(timeout=1) == "fenced"
    finally:
        group.stop()
        await serving
    # Nothing of the replaced attempt landed: no push, no artifact, no result.
    assert git("branch", "--list", "ballet/*", cwd=origin) == ""
    assert all(a.job_key != job_key for a in await session_jobs.artifacts.of(TICKET))
    assert not any(isinstance(e, SessionFinished) for e in tickets.applied)
    assert await queued_end(redis, job_key) == crash  # the crash keeps the session's end
