"""A session queued on a pool with no live worker (docs/state-machine.md): the
ticket keeps running, its tracking comment names the pool, a worker taking the
session clears it, and past the stage's timeout the question blames the pool."""

from __future__ import annotations

import pytest
from ballet.core.effects import CancelSession, StartSession, UpsertTrackingComment
from ballet.core.events import ReconcileTick, SessionStarted, WorkerAwaited
from ballet.core.handlers import IllegalEvent
from ballet.core.machine import TABLE
from core_kit import CODEX, Ticket, agent, at, make_pipeline


def gpu_ticket() -> Ticket:
    stages = (agent("implement", pool="gpu", timeout_minutes=30), agent("review"))
    return Ticket(make_pipeline(stages))


def test_the_session_spec_names_the_stage_pool_or_the_runtime_pool_or_default() -> None:
    assert gpu_ticket().session().pool == "gpu"
    assert Ticket().session().pool == "default"
    on_runtime = CODEX.model_copy(update={"pool": "big"})
    stage = agent("implement").model_copy(update={"runtime_config": on_runtime, "pool": "big"})
    assert Ticket(make_pipeline((stage,))).session().pool == "big"


def test_a_session_waiting_for_a_worker_keeps_running_and_says_which_pool() -> None:
    t = gpu_ticket()
    job = t.session().job_key
    t.feed(WorkerAwaited(now=t.now(), job_key=job, pool="gpu"))
    assert t.rec.status == "running" and t.rec.open_run is not None
    assert t.rec.open_run.awaits_pool == "gpu"
    body = t.one(UpsertTrackingComment).body
    assert "**Waiting for a worker** of pool `gpu`" in body and "ballet worker --pool gpu" in body
    with pytest.raises(IllegalEvent, match="already noted"):
        t.feed(WorkerAwaited(now=t.now(), job_key=job, pool="gpu"))
    with pytest.raises(IllegalEvent, match="stale"):
        t.feed(WorkerAwaited(now=t.now(), job_key=job + "x", pool="gpu"))

    t.feed(SessionStarted(now=t.now(), job_key=job, worker="w1"))
    assert t.rec.open_run is not None and t.rec.open_run.awaits_pool is None
    assert "Waiting for a worker" not in t.one(UpsertTrackingComment).body
    with pytest.raises(IllegalEvent, match="was not waiting"):
        t.feed(SessionStarted(now=t.now(), job_key=job, worker="w1"))


def test_past_the_stage_timeout_the_question_says_no_worker_of_the_pool_was_up() -> None:
    t = gpu_ticket()
    job = t.session().job_key
    t.feed(WorkerAwaited(now=t.now(), job_key=job, pool="gpu"))
    with pytest.raises(IllegalEvent, match="within its timeout"):
        t.feed(ReconcileTick(now=at(29)))
    t.feed(ReconcileTick(now=at(31)))
    assert t.one(CancelSession).job_key == job
    assert t.rec.status == "waiting" and t.rec.waiting is not None
    assert t.rec.waiting.kind == "question"
    assert "no worker of pool `gpu` was up to run the `implement` session" in t.rec.waiting.reason
    assert "30-minute timeout" in t.rec.waiting.reason
    assert t.rec.history[-1].outcome == "timed_out"
    # ...and an answer runs the stage again on the same pool.
    t.command("/ballet retry")
    assert t.one(StartSession).spec.pool == "gpu"


def test_the_table_rows_keep_the_ticket_running() -> None:
    for kind in ("worker_awaited", "session_started"):
        assert TABLE[("running", kind)].to == ("running",)
        assert not any(k == kind for s, k in TABLE if s != "running")
