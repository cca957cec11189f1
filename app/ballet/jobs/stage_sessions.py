"""Stage sessions on the pools' sessions queues: the session job itself.

The launcher (`launcher.ArqSessionLauncher`, re-exported here) makes each
StartSession the arq job `run_stage_session`, on its pool's queue; a
CancelSession aborts that job, which cancels its task and with it kills the
session's process group (`sessions.process` SIGKILLs the group on cancel).

The job fills in what the engine does not carry (`session_specs`; the git
token is asked for when git needs it), runs the session while beating a
heartbeat key the reconciler watches, keeps its report and handoff as the
ticket's artifacts and sends a SessionFinished to the ticket pipeline
through the events queue, then applies it at once itself (session_results).
As it starts it notes the worker it runs on (the ticket's next session prefers
it) and, for a session the ticket was told waits for a worker, says one took it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import structlog
from arq import Retry
from arq.worker import Function, func
from pydantic import ValidationError

from ballet import metrics
from ballet.core.effects import SessionSpec, StartSession
from ballet.core.events import SessionCrashed, SessionStarted
from ballet.core.report import Report
from ballet.core.routing import job_key
from ballet.github.forge import ForgeError, ForgeUnavailable, RateLimited
from ballet.jobs import pools
from ballet.jobs.heartbeats import Lease, beating, last_beat
from ballet.jobs.launcher import KEEP_SECONDS, RUN_STAGE_SESSION
from ballet.jobs.launcher import LAUNCHED_PREFIX as LAUNCHED_PREFIX
from ballet.jobs.launcher import ArqSessionLauncher as ArqSessionLauncher
from ballet.jobs.launcher import is_launched as is_launched
from ballet.jobs.prefetch import clone_access
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.session_results import (
    apply_now,
    deliver_crash,
    deliver_result,
    finished_event_id,
    session_of,
)
from ballet.jobs.session_specs import StaleSession, build_runner_spec, runner_stage_id, ticket_of
from ballet.jobs.ticket_events import send_ticket_event
from ballet.sessionlog.sink import LogSink
from ballet.sessionlog.stored_after import StoredAfter
from ballet.sessions import GitAuth, RunnerSpec, SessionResult, open_workspace, run_session
from ballet.sessions.leftovers import to_the_end
from ballet.sessions.resources import workspace_disk
from ballet.sessions.workspace import Workspace
from ballet.spend_ledger import SpendLedger

log = structlog.get_logger("ballet.jobs.stage_sessions")

SESSION_RETRY_SECONDS = 30.0
# A session's job is tried this often (GitHub unreachable before it could start).
SESSION_MAX_TRIES = 5


async def run_stage_session(ctx: dict[str, Any], start: dict[str, Any]) -> str:
    """The job: run one session of a StartSession effect; returns its outcome."""
    services: Services = ctx["services"]
    jobs = services.session_jobs
    if jobs is None:
        raise RuntimeError(
            "this worker cannot run sessions (Services.session_jobs is None); "
            "build the worker's services with the session runner wired in"
        )
    spec = StartSession.model_validate(start).spec
    job_try: int = ctx.get("job_try", 1)
    began = await last_beat(jobs.redis, spec.job_key) if job_try > 1 else None
    if began is not None:
        # An earlier try began this session and its worker went away; running it
        # again could push a second, different result onto the branch. The ticket
        # runs the stage again as a new attempt (a new job) instead.
        crashed = SessionCrashed(
            **session_of(jobs, spec),
            last_beat=began,
            retries_allowed=jobs.crash_retries,
            spend=await SpendLedger(jobs.redis).session(spec.job_key),
        )
        await deliver_crash(jobs.redis, ticket_of(spec), crashed)
        return CRASHED
    # The workspace (mirror fetch, clone) needs only the engine's spec: it is made
    # while the issue, the record and the reports are read, not after them (nor after
    # this worker notes it took the session); and it is removed once the result is
    # delivered and applied, not before.
    # Where to clone from and with what token: asked once, for the workspace and the
    # runner's spec (the push's URL) alike.
    access = asyncio.create_task(clone_access(jobs.tickets, spec.repo))
    workspace = asyncio.create_task(_open_workspace(jobs, spec, access))
    # The finished log is stored while the result is delivered and applied.
    logs = StoredAfter(jobs.logs) if jobs.logs is not None else None
    # Noted while the session is prepared; its result is delivered after it (SessionStarted first).
    taken = asyncio.create_task(_taken(services, jobs, spec))
    try:
        with metrics.POOL_RUNNING.labels(metrics.pool_label(spec.pool)).track_inprogress():
            return await _run_and_deliver(
                services, jobs, spec, job_try, access, workspace, logs, taken
            )
    finally:
        await _noted(taken, spec.job_key)
        await _discard(jobs, spec.job_key, workspace)
        if logs is not None:
            await logs.stored()


async def _taken(services: Services, jobs: SessionJobs, spec: SessionSpec) -> None:
    """This worker runs the session: the ticket's next session in the pool prefers it,
    and a ticket told the session waited for a worker hears that one took it."""
    worker = services.settings.worker_id
    _, awaited = await asyncio.gather(
        pools.ran_here(jobs.redis, ticket_of(spec), spec.pool, spec.job_key, worker),
        pools.was_awaiting(jobs.redis, spec.job_key),
    )
    if awaited:
        started = SessionStarted(now=jobs.clock(), job_key=spec.job_key, worker=worker)
        event_id = f"session-started:{spec.job_key}"
        await send_ticket_event(jobs.redis, ticket_of(spec), started, event_id=event_id)


async def _run_and_deliver(
    services: Services,
    jobs: SessionJobs,
    spec: SessionSpec,
    job_try: int,
    access: asyncio.Task[tuple[str, str | None]],
    workspace: asyncio.Task[Workspace],
    logs: LogSink | None,
    taken: asyncio.Task[None],
) -> str:
    try:
        # Beats for the whole job, not only while the agent's process runs: a long
        # fetch or push must not look like a dead worker to the reconciler, nor
        # may the moment between the session's end and its event being queued.
        # Not started (Retry), or a worker stopping cleanly (a deploy cancels its
        # jobs and arq runs them again elsewhere; the agent's process group is dead
        # and a session pushes only once it has its report): the beat is forgotten,
        # so the next try starts afresh instead of being taken for a crash. (An
        # abort by CancelSession is never tried again; forgetting changes nothing.)
        async with beating(
            jobs.redis,
            spec.job_key,
            every_seconds=jobs.heartbeat_seconds,
            clock=jobs.clock,
            forget_on=(Retry, asyncio.CancelledError),
        ) as lease:
            result = await _run(jobs, spec, job_try, access, workspace, lease, logs)
            if not await lease.renew():
                # Its worker stalled past the heartbeat's life and the reconciler
                # judged it crashed: another attempt runs the stage, and only that
                # one's report, artifact and result may land.
                log.warning("session result dropped: fenced off", job_key=spec.job_key)
                return FENCED
            if spec.branch is not None:
                # The ticket's next session, likely on this worker, finds its clone
                # made while the result is applied (sessions/prepared.py).
                disk = workspace_disk(jobs.options.isolation, spec.runtime_config)
                jobs.workspaces.prepare(spec.repo, branch=spec.branch, base=spec.base, disk=disk)
            await asyncio.wait([taken])  # its SessionStarted goes before the result
            finished = await deliver_result(
                jobs, spec, result, applies=services.tickets is not None
            )
    except StaleSession as stale:
        log.info("session skipped", job_key=spec.job_key, reason=str(stale))
        return "stale"
    await apply_now(services, ticket_of(spec), finished, finished_event_id(spec.job_key))
    if spec.branch is not None:
        await _unless_a_session_is_next(jobs, spec, spec.branch)
    log.info("session finished", job_key=spec.job_key, outcome=result.report.outcome)
    return result.report.outcome


async def _noted(taken: asyncio.Task[None], job_key: str) -> None:
    """Wait for `_taken`; its failure costs only a preference and a note, not the result."""
    await asyncio.wait([taken])
    if not taken.cancelled() and (error := taken.exception()) is not None:
        log.warning("session's worker not noted", job_key=job_key, error=repr(error))


async def _unless_a_session_is_next(jobs: SessionJobs, spec: SessionSpec, branch: str) -> None:
    """Drop the clone prepared as the session ended when its result started no
    session: the ticket ended, or waits for a person (a later session clones afresh)."""
    try:
        record = await jobs.tickets.record(ticket_of(spec))
    except Exception as exc:  # the clone then ages out; nothing else depends on it
        log.info("prepared clone kept", job_key=spec.job_key, reason=repr(exc))
        return
    if record is None or record.status != "running" or record.open_run is None:
        await jobs.workspaces.unprepare(spec.repo, branch=branch, base=spec.base)


CRASHED = "crashed"
FENCED = "fenced"  # the job's result when the session was judged crashed as it ran


RUN_STAGE_SESSION_JOB: Function = func(
    run_stage_session, name=RUN_STAGE_SESSION, keep_result=KEEP_SECONDS
)


async def _run(
    jobs: SessionJobs,
    spec: SessionSpec,
    job_try: int,
    access: asyncio.Task[tuple[str, str | None]],
    workspace: asyncio.Task[Workspace],
    lease: Lease,
    logs: LogSink | None,
) -> SessionResult:
    try:
        runner_spec = await build_runner_spec(jobs, spec, clone_url=_url(access))
    except (RateLimited, ForgeUnavailable) as exc:
        defer = exc.retry_after_seconds if isinstance(exc, RateLimited) else None
        log.warning("session deferred: GitHub unavailable", job_key=spec.job_key, error=str(exc))
        raise Retry(defer=defer or SESSION_RETRY_SECONDS * job_try) from exc
    except (ForgeError, ValidationError) as exc:
        return failed_result(
            f"Ballet could not prepare the session: {exc}. Fix that, then `/ballet retry`."
        )
    try:
        leased = _leased(jobs, lease)
        return await run_counted(jobs, runner_spec, workspace, git_auth=leased, logs=logs)
    except (RateLimited, ForgeUnavailable) as exc:
        # GitHub failed the clone's or the push's token past its retries: nothing was
        # pushed, so the session runs again later rather than the stage failing on it.
        defer = exc.retry_after_seconds if isinstance(exc, RateLimited) else None
        log.warning("session deferred: GitHub unavailable", job_key=spec.job_key, error=str(exc))
        raise Retry(defer=defer or SESSION_RETRY_SECONDS * job_try) from exc
    except FencedOff as exc:
        return failed_result(str(exc))  # dropped, not delivered (`_run_and_deliver`)
    except Exception as exc:
        # A bug or a lost disk must still end the stage with a report, not a silent job.
        log.exception("session could not run", job_key=spec.job_key)
        return failed_result(f"Ballet could not run the session ({exc!r}); see the worker's log.")


class FencedOff(Exception):
    """The session was judged crashed while it ran: it must not push."""


def _leased(jobs: SessionJobs, lease: Lease) -> GitAuth:
    """The git token, for a session that still holds its lease: asked for the push
    (and any fetch), so a session fenced off while it ran pushes nothing onto the
    branch the attempt that replaced it works on. A renewed lease keeps the verdict
    off for the heartbeat's life, far longer than the token's push takes."""

    async def token(repo: str) -> str | None:
        if not await lease.renew():
            raise FencedOff(f"{lease.job_key} was judged crashed; another attempt runs")
        return await jobs.tickets.git_token(repo)

    return token


async def _url(access: Awaitable[tuple[str, str | None]]) -> str:
    return (await access)[0]


async def _open_workspace(
    jobs: SessionJobs, spec: SessionSpec, access: Awaitable[tuple[str, str | None]]
) -> Workspace:
    key = job_key(ticket_of(spec), runner_stage_id(spec), spec.iteration, spec.attempt, spec.phase)
    clone_url, token = await access
    launched = jobs.prefetch.launched_at(spec.job_key) if jobs.prefetch else None
    return await open_workspace(
        jobs.workspaces,
        fresh_since=launched,
        repo=spec.repo,
        clone_url=clone_url,
        token=token,
        key=key,
        branch=spec.branch,
        base=spec.base,
        # The session's own disk, of the size its limits give it, where there is one.
        disk=workspace_disk(jobs.options.isolation, spec.runtime_config),
    )


async def _discard(jobs: SessionJobs, job_key: str, workspace: asyncio.Task[Workspace]) -> None:
    """Remove the session's workspace, whether or not the session ran. Its making is
    waited for, not cancelled: a cancelled git would go on writing, unwaited. To the
    end: a job cancelled as it ends (a person's cancel, then the worker's stop) would
    otherwise leave the workspace made after it, its disk mounted."""

    async def discard() -> None:
        if not workspace.done():  # a slow fetch or clone: what a slow stop waits for
            log.info("session workspace awaited, to remove it", job_key=job_key)
        await asyncio.wait([workspace])
        if not workspace.cancelled() and workspace.exception() is None:
            await jobs.workspaces.remove(workspace.result())

    await to_the_end(discard())


async def run_counted(
    jobs: SessionJobs,
    spec: RunnerSpec,
    workspace: Awaitable[Workspace] | None = None,
    git_auth: GitAuth | None = None,
    logs: LogSink | None = None,
) -> SessionResult:
    """`run_session`, counted in the session metrics by adapter and how it ended; its
    log goes to `logs` (default: the worker's store)."""
    adapter = spec.runtime.adapter
    try:
        with metrics.SESSIONS_RUNNING.labels(adapter).track_inprogress():
            result = await run_session(
                spec,
                workspaces=jobs.workspaces,
                git_auth=git_auth or jobs.tickets.git_token,
                parent_env=jobs.parent_env,
                options=jobs.options,
                prepared=workspace,
                log_sink=logs or jobs.logs,
            )
    except Exception:
        metrics.SESSIONS.labels(adapter, "error").inc()
        raise
    metrics.session_ended(
        adapter,
        result.failure_reason or "reported",
        result.duration_seconds,
        (result.egress_allowed, result.egress_refused),
    )
    return result


def failed_result(summary: str) -> SessionResult:
    report = Report(outcome="failed", summary=summary)
    return SessionResult(
        report=report,
        head_sha=None,
        usage=report.usage,
        duration_seconds=0.0,
        handoff=None,
        output_tail="",
    )
