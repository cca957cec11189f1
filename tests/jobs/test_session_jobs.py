"""Stage sessions through the real sessions queue: launch once, run, report, hand over."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from arq.connections import ArqRedis
from ballet.core.config import Runtime
from ballet.core.events import SessionFinished
from ballet.jobs.artifacts import Artifacts
from ballet.jobs.heartbeats import heartbeat_key, last_beat_key
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.session_specs import build_runner_spec
from ballet.jobs.stage_sessions import ArqSessionLauncher, run_stage_session
from ballet.queue import SESSIONS_QUEUE
from ballet.sessions import route
from ballet.settings import Settings
from ballet.skills import builtin_skills
from ballet.tickets.live import LIVE_TICKETS
from fake_github import FakeGitHub
from git_repos import git
from jobs_kit import (
    HOUSE_STYLE,
    ISSUE,
    ISSUE_BODY,
    ISSUE_URL,
    REPO,
    EngineTickets,
    agent_runtime,
)
from jobs_running import queued_crash, queued_finish, run_events, run_sessions

pytestmark = pytest.mark.anyio

ISSUE_PATH = f"/repos/{REPO}/issues/{ISSUE}"


async def finished(redis: ArqRedis, job_key: str) -> SessionFinished:
    event = await queued_finish(redis, job_key)
    assert event is not None, f"no SessionFinished was queued for {job_key}"
    return event


async def test_launching_the_same_session_twice_enqueues_one_job(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    await launcher.launch(start)
    assert await redis.zrange(SESSIONS_QUEUE, 0, -1) == [start.spec.job_key.encode()]
    assert await redis.smembers(LIVE_TICKETS) == {f"{REPO}#7".encode()}
    await run_sessions(settings, services)
    # A redelivered effect after the session ran does not start it again.
    await launcher.launch(start)
    assert await redis.zcard(SESSIONS_QUEUE) == 0


async def test_a_session_job_hands_its_report_and_head_to_the_events_queue(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    origin: Path,
    github: FakeGitHub,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    await run_sessions(settings, services)

    event = await finished(redis, start.spec.job_key)
    assert (event.job_key, event.stage, event.iteration, event.attempt) == (
        start.spec.job_key,
        "implement",
        1,
        1,
    )
    assert event.report.outcome == "done"
    assert event.report.summary == "implement finished"
    branch = start.spec.branch
    assert branch is not None
    assert event.head_sha == git("rev-parse", f"refs/heads/{branch}", cwd=origin)
    seen = json.loads(event.report.details)
    assert seen["body"] == ISSUE_BODY
    assert seen["labels"] == ["ballet", "ballet:running"]
    assert seen["url"] == ISSUE_URL
    assert seen["house_style_in_prompt"] is True  # the record's pinned custom skill
    assert seen["token_in_env"] is False
    assert github.requests_to("GET", ISSUE_PATH) == 1
    assert not await redis.exists(heartbeat_key(start.spec.job_key))


async def test_earlier_reports_reach_the_next_session_and_end_with_the_ticket(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
) -> None:
    implement = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(implement)
    await run_sessions(settings, services)
    await run_events(settings, services)  # the engine takes the result: on to review
    review = tickets.starts[-1]
    assert review.spec.stage == "review"

    await launcher.launch(review)
    await run_sessions(settings, services)
    event = await finished(redis, review.spec.job_key)
    assert json.loads(event.report.details)["earlier"] == [["implement", "implement finished"]]
    stored = await Artifacts(redis).of(f"{REPO}#7")
    assert [(a.stage, a.report.outcome) for a in stored] == [
        ("implement", "done"),
        ("review", "approve"),
    ]
    await run_events(settings, services)
    assert tickets.records[f"{REPO}#7"].status == "done"


async def test_a_retried_job_of_a_session_that_began_reports_the_crash_instead(
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    agent_script: Path,
    origin: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    await redis.set(last_beat_key(start.spec.job_key), "2026-01-01T12:03:00+00:00")

    outcome = await run_stage_session(
        {"services": services, "job_try": 2}, start.model_dump(mode="json")
    )

    assert outcome == "crashed"
    event = await queued_crash(redis, start.spec.job_key)
    assert event is not None and event.job_key == start.spec.job_key
    assert event.last_beat == datetime(2026, 1, 1, 12, 3, tzinfo=UTC)
    assert git("branch", "--list", "ballet/*", cwd=origin) == ""  # the agent never ran again


async def test_an_issue_github_cannot_find_fails_the_session_saying_why(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    github: FakeGitHub,
) -> None:
    del github.issues[(REPO, ISSUE)]  # deleted (or transferred) after the ticket began
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    await run_sessions(settings, services)

    event = await finished(redis, start.spec.job_key)
    assert event.report.outcome == "failed"
    assert "could not prepare the session" in event.report.summary
    assert "was the issue deleted or transferred?" in event.report.summary


async def test_a_rate_limited_issue_read_defers_the_session_which_then_runs(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    github: FakeGitHub,
) -> None:
    github.fail_next(
        "GET",
        ISSUE_PATH,
        403,
        {"message": "You have exceeded a secondary rate limit"},
        {"retry-after": "1"},
    )
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    await run_sessions(settings, services)  # burst mode waits out the deferral

    event = await finished(redis, start.spec.job_key)
    assert event.report.outcome == "done"  # the retry ran it, not reported it as a crash
    assert github.requests_to("GET", ISSUE_PATH) == 2


async def test_a_signoff_session_runs_as_its_role_with_the_role_instructions(
    session_jobs: SessionJobs,
    tickets: EngineTickets,
    agent_script: Path,
    origin: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    signoff = start.spec.model_copy(
        update={
            "kind": "signoff",
            "role": "security",
            "skills": ("reviewer", "house-style", "no-such-skill"),
            "instructions": "Review for security: secrets, injection, authz.",
        }
    )

    spec = await build_runner_spec(session_jobs, signoff)

    assert spec.stage.id == "signoff-security"
    assert spec.stage.instructions == "Review for security: secrets, injection, authz."
    assert spec.skill_texts["reviewer"] == builtin_skills()["reviewer"]
    assert spec.skill_texts["house-style"] == HOUSE_STYLE
    assert "no-such-skill" not in spec.skill_texts
    assert spec.timeout_seconds == start.spec.timeout_minutes * 60
    assert (spec.ticket.body, spec.ticket.url) == (ISSUE_BODY, ISSUE_URL)
    assert spec.clone_url == origin.as_uri()


async def test_a_codex_research_phase_runs_with_codex_own_model_not_opus(
    session_jobs: SessionJobs, tickets: EngineTickets, origin: Path
) -> None:
    codex = Runtime(adapter="codex", model="gpt-5-codex")
    start = await tickets.request(codex, phases=("research", "implement"))

    spec = await build_runner_spec(session_jobs, start.spec)

    # The engine passes only the stage's own overrides; the session side routes.
    assert (spec.phase, spec.model, spec.effort) == ("research", None, None)
    assert spec.runtime == codex
    routed = route(
        spec.runtime.adapter,
        spec.phase,
        stage_model=spec.model,
        stage_effort=spec.effort,
        runtime_model=spec.runtime.model,
        runtime_effort=spec.runtime.effort,
    )
    assert routed == ("gpt-5-codex", "high")


async def test_a_session_the_ticket_moved_on_from_while_queued_is_skipped(
    settings: Settings,
    services: Services,
    redis: ArqRedis,
    tickets: EngineTickets,
    launcher: ArqSessionLauncher,
    agent_script: Path,
    origin: Path,
) -> None:
    start = await tickets.request(agent_runtime(agent_script))
    await launcher.launch(start)
    # The ticket was cancelled while its session waited for a slot, and the
    # CancelSession never reached the queue.
    record = tickets.records[f"{REPO}#7"]
    closed = record.history[-1].model_copy(update={"end": record.created_at})
    moved_on = record.model_copy(update={"status": "cancelled", "history": (closed,)})
    await tickets.store.commit(moved_on, [], None)

    await run_sessions(settings, services)

    assert await queued_finish(redis, start.spec.job_key) is None
    assert git("branch", "--list", "ballet/*", cwd=origin) == ""  # the agent never ran
    assert await Artifacts(redis).of(f"{REPO}#7") == ()


async def test_the_git_token_waits_out_a_briefly_failing_github(
    session_jobs: SessionJobs,
    tickets: EngineTickets,
    agent_script: Path,
    github: FakeGitHub,
) -> None:
    # Asked mid-session for the push: a rate limit or a 502 there must not lose the work.
    # Tokens live 62 s: githubkit keeps one until a minute before it ends, 1-2 s here.
    github.token_lifetime = timedelta(seconds=62)
    await tickets.request(agent_runtime(agent_script))
    assert await session_jobs.tickets.git_token(REPO)  # minted once
    calls = len(github.calls)
    assert await session_jobs.tickets.git_token(REPO)
    assert len(github.calls) == calls  # the token githubkit holds costs no request
    # The token expired: minting a new one fails twice first.
    await asyncio.sleep(2.1)
    tokens = r"^/app/installations/\d+/access_tokens$"
    github.fail_next("POST", tokens, 403, {"message": "secondary rate limit"}, {"retry-after": "1"})
    github.fail_next("POST", tokens, 502, {"message": "Server Error"})
    assert await session_jobs.tickets.git_token(REPO)
    assert sum(1 for m, p in github.calls[calls:] if m == "POST" and "access_tokens" in p) >= 3
