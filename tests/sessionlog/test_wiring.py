"""The session logs in their places: the worker's session jobs write to them and
its reconciler sweeps them; the web app's pages find them on `app.state.logs`."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from arq.connections import ArqRedis
from ballet.jobs.reconciler import reconcile
from ballet.sessionlog.paths import log_paths
from ballet.sessionlog.store import SessionLogs
from ballet.settings import Settings
from ballet.tickets.live import LiveTickets
from ballet.tickets.store import RecordStore
from ballet.web import create_app
from ballet.wiring import services_for, session_jobs_for
from sessionlog_kit import JOB_KEY

pytestmark = pytest.mark.anyio


def no_forge(installation: int) -> Any:
    raise AssertionError("the test reaches no GitHub")


async def test_the_reconciler_sweeps_the_workers_session_logs(
    redis: ArqRedis, sessionlog_redis_url: str, tmp_path: Path
) -> None:
    settings = Settings(redis_url=sessionlog_redis_url, data_dir=tmp_path, log_retention_days=3)
    jobs = session_jobs_for(settings, redis, RecordStore(redis), no_forge)
    assert isinstance(jobs.logs, SessionLogs)
    await jobs.logs.finish(JOB_KEY, b"a finished session\n", [])
    then = (datetime.now(UTC) - timedelta(days=4)).timestamp()
    paths = log_paths(JOB_KEY)
    for path in (paths.log, paths.steps, paths.meta):
        os.utime(tmp_path / "logs" / path, (then, then))
    await LiveTickets(redis).mark_complete()  # no live tickets: nothing asks GitHub

    services = services_for(settings, redis, consumer=None, session_jobs=jobs)  # type: ignore[arg-type]
    await reconcile({"services": services})
    assert not await jobs.logs.exists(JOB_KEY)


async def test_the_web_app_holds_the_session_logs_for_its_pages(
    sessionlog_redis_url: str, tmp_path: Path
) -> None:
    settings = Settings(webhook_secret="s", redis_url=sessionlog_redis_url, data_dir=tmp_path)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        logs = app.state.logs
        assert isinstance(logs, SessionLogs)
        await logs.finish(JOB_KEY, b"read by the pages\n", [])
        found = await logs.read(JOB_KEY)
        assert found is not None and found.log == b"read by the pages\n"


async def test_a_web_app_whose_log_store_is_misnamed_still_takes_webhooks(
    sessionlog_redis_url: str, tmp_path: Path
) -> None:
    settings = Settings(
        webhook_secret="s",
        redis_url=sessionlog_redis_url,
        data_dir=tmp_path,
        log_store="ftp://nowhere/logs",
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        assert app.state.logs is None
        assert app.state.ballet is not None
