"""The drain leaves a deferred write in the outbox, carries on, and writes it once due.

On a real Valkey: the outbox is what survives a worker's crash, so these run
against the store itself (tickets/drain.py, core/outbox.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from ballet.core.effects import (
    AnyEffect,
    MarkerKey,
    PostReportComment,
    SetCheckRun,
    UpsertTrackingComment,
)
from ballet.core.record import Record
from ballet.tickets.drain import Drain
from ballet.tickets.store import RecordStore
from github_edge_kit import stored_record
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio
T = datetime(2026, 1, 2, tzinfo=UTC)
DUE = T + timedelta(seconds=5)
REPO = "octo/demo"
KEY = f"{REPO}#7"


def record(version: int) -> Record:
    return stored_record(REPO, version=version)


def check(status: str, not_before: datetime | None = None) -> SetCheckRun:
    return SetCheckRun(
        repo=REPO,
        name="ballet/review",
        head_sha="c1",
        status=status,  # type: ignore[arg-type]
        conclusion="success" if status == "completed" else None,
        not_before=not_before,
    )


def tracking(body: str, not_before: datetime | None = None) -> UpsertTrackingComment:
    marker = MarkerKey(ticket=KEY, kind="tracking")
    return UpsertTrackingComment(
        repo=REPO, number=8, target="pr", marker=marker, body=body, not_before=not_before
    )


REPORT = PostReportComment(
    repo=REPO, number=8, marker=MarkerKey(ticket=KEY, kind="report"), body="report"
)


class Edge:
    """What the drain wrote and when it asked to come back."""

    def __init__(self) -> None:
        self.written: list[AnyEffect] = []
        self.later: list[datetime] = []

    async def carry_out(self, entry_id: str, effect: AnyEffect) -> None:
        self.written.append(effect)

    async def come_back(self, key: str, when: datetime) -> None:
        assert key == KEY
        self.later.append(when)


@pytest.fixture
async def store(github_redis_url: str) -> AsyncIterator[RecordStore]:
    client = Redis.from_url(github_redis_url)
    await client.flushdb()
    try:
        yield RecordStore(client)
    finally:
        await client.aclose()


async def drain_at(store: RecordStore, now: datetime) -> Edge:
    edge = Edge()
    await Drain(store, lambda: now, edge.come_back).run(KEY, edge.carry_out)
    return edge


async def test_a_deferred_write_waits_while_the_effects_behind_it_go_out(
    store: RecordStore,
) -> None:
    start = [check("in_progress", DUE), tracking("review", DUE), REPORT]
    await store.commit(record(1), start, None)
    edge = await drain_at(store, T)
    assert edge.written == [REPORT]  # behind the deferred ones, and not held up by them
    assert edge.later == [DUE]  # a deferred job comes back when they are due
    assert [e.effect for e in await store.outbox(KEY)] == [
        check("in_progress", DUE),
        tracking("review", DUE),
    ]


async def test_a_session_past_the_grace_gets_its_start_written_after_a_crash(
    store: RecordStore,
) -> None:
    await store.commit(record(1), [check("in_progress", DUE), tracking("review", DUE)], None)
    assert (await drain_at(store, T)).written == []
    # The worker died: its deferred job is gone, but the outbox is in Redis and a
    # later drain (the reconciler's tick, the next event) writes what is due.
    edge = await drain_at(store, DUE)
    assert edge.written == [check("in_progress", DUE), tracking("review", DUE)]
    assert edge.later == []
    assert await store.outbox(KEY) == []


async def test_an_instant_session_start_is_never_written(store: RecordStore) -> None:
    await store.commit(record(1), [check("in_progress", DUE), tracking("review", DUE)], None)
    assert (await drain_at(store, T)).written == []
    # The session ended within the grace: its end rewrites both.
    await store.commit(record(2), [REPORT, check("completed"), tracking("verify")], None)
    edge = await drain_at(store, T + timedelta(seconds=1))
    assert edge.written == [REPORT, check("completed"), tracking("verify")]
    assert await store.outbox(KEY) == []
    # Nothing is left for the deferred job to write when it comes.
    assert (await drain_at(store, DUE)).written == []


async def test_a_due_write_is_not_held_for_a_deferred_rewrite(store: RecordStore) -> None:
    await store.commit(record(1), [tracking("question answered")], None)
    await store.commit(record(2), [tracking("review", DUE)], None)
    edge = await drain_at(store, T)
    assert edge.written == [tracking("question answered")]
    assert [e.effect for e in await store.outbox(KEY)] == [tracking("review", DUE)]


async def test_a_start_never_written_leaves_nothing_to_close_on_the_head_it_left(
    store: RecordStore,
) -> None:
    # A rework's review starts on c1 (its "in progress" deferred) and the head moves
    # at once: the close on c1 would only overwrite the verdict an earlier review
    # left there, so neither is written; a start already written is still closed.
    close = check("completed").model_copy(update={"closes_start": True, "conclusion": "neutral"})
    await store.commit(record(1), [check("in_progress", DUE)], None)
    await store.commit(record(2), [close, REPORT], None)
    edge = await drain_at(store, T + timedelta(seconds=1))
    assert edge.written == [REPORT]
    assert await store.outbox(KEY) == []

    await store.commit(record(3), [check("in_progress", DUE)], None)
    assert (await drain_at(store, DUE)).written == [check("in_progress", DUE)]  # shown
    await store.commit(record(4), [close], None)
    assert (await drain_at(store, DUE)).written == [close]  # so it is closed
