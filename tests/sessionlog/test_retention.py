"""Retention: finished logs older than it are deleted, younger ones kept, and of
every worker's reconciler asking at once, one sweeps."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from arq.connections import ArqRedis
from ballet.sessionlog.objects import open_object_store
from ballet.sessionlog.paths import log_paths
from ballet.sessionlog.store import SWEEP_LOCK_KEY, SessionLogs

pytestmark = pytest.mark.anyio

OLD = "octo/widgets#1:implement:1:1"
YOUNG = "octo/widgets#2:implement:1:1"
NOW = datetime.now(UTC)


def age(root: Path, job_key: str, days: float) -> None:
    """Backdate a finished log's objects, as if written `days` ago."""
    then = (NOW - timedelta(days=days)).timestamp()
    paths = log_paths(job_key)
    for path in (paths.log, paths.steps, paths.meta):
        os.utime(root / path, (then, then))


@pytest.fixture
async def aged(logs: SessionLogs, tmp_path: Path) -> SessionLogs:
    await logs.finish(OLD, b"old\n", [])
    await logs.finish(YOUNG, b"young\n", [])
    age(tmp_path / "logs", OLD, days=31)
    age(tmp_path / "logs", YOUNG, days=29)
    return logs


async def test_the_sweep_deletes_only_logs_older_than_the_retention(
    aged: SessionLogs, tmp_path: Path
) -> None:
    assert await aged.sweep(NOW) == 3  # the log, its steps and its facts
    assert not await aged.exists(OLD)
    assert await aged.read(OLD) is None
    found = await aged.read(YOUNG)
    assert found is not None and found.log == b"young\n"
    # The local store removes the folders it emptied.
    assert not (tmp_path / "logs" / log_paths(OLD).log).parent.exists()
    assert await aged.sweep(NOW) == 0


async def test_the_retention_is_the_deployments(redis: ArqRedis, tmp_path: Path) -> None:
    logs = SessionLogs(redis, open_object_store(None, tmp_path), retention=timedelta(days=7))
    await logs.finish(OLD, b"old\n", [])
    age(tmp_path / "logs", OLD, days=8)
    assert await logs.sweep(NOW) == 3


async def test_of_racing_reconcilers_one_sweeps_and_then_not_for_an_hour(
    aged: SessionLogs, redis: ArqRedis, tmp_path: Path
) -> None:
    other_worker = SessionLogs(redis, open_object_store(None, tmp_path))
    results = await asyncio.gather(
        *(logs.sweep_if_due(NOW) for logs in (aged, other_worker, aged, other_worker))
    )
    assert sorted(results, key=str) == [3, None, None, None]
    assert not await aged.exists(OLD) and await aged.exists(YOUNG)
    assert 3500 < await redis.ttl(SWEEP_LOCK_KEY) <= 3600
    # Half a minute later, at the next reconcile, nobody sweeps again.
    assert await aged.sweep_if_due(NOW + timedelta(seconds=30)) is None


async def test_two_sweeps_racing_without_the_lock_both_finish(
    aged: SessionLogs, redis: ArqRedis, tmp_path: Path
) -> None:
    """A sweep that finds a log already gone (another's, an operator's) goes on."""
    other = SessionLogs(redis, open_object_store(None, tmp_path))
    await asyncio.gather(aged.sweep(NOW), other.sweep(NOW))
    assert not await aged.exists(OLD) and await aged.exists(YOUNG)
    assert not (tmp_path / "logs" / log_paths(OLD).log).exists()
