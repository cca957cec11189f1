"""Fixtures of the session-job area: a Valkey database of its own, the shared fake GitHub,
a bare git remote, the scripted agent and the worker's services wired for sessions."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from area_fixtures import area_redis_url, emptied_pool, rsa_private_key_pem
from arq.connections import ArqRedis
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.jobs.deliveries import LoggingConsumer
from ballet.jobs.services import Services, SessionJobs
from ballet.jobs.stage_sessions import ArqSessionLauncher
from ballet.sessions import SessionOptions
from ballet.sessions.confine import Isolation
from ballet.settings import Settings
from ballet.tickets.store import RecordStore
from ballet.wiring import services_for, session_jobs_for
from fake_github import API, APP_ID, FakeGitHub
from git_repos import make_origin
from jobs_kit import AGENT, EngineTickets, seeded_github

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 7


@pytest.fixture
def jobs_redis_url(redis_url: str) -> str:
    return area_redis_url(redis_url, REDIS_DB)


@pytest.fixture
async def redis(jobs_redis_url: str) -> AsyncIterator[ArqRedis]:
    async with emptied_pool(jobs_redis_url) as pool:
        yield pool


@pytest.fixture(scope="session")
def app_private_key() -> str:
    return rsa_private_key_pem()


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = seeded_github()
    with fake.serving():
        yield fake


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return make_origin(tmp_path, {"README.md": "# demo\n"})


@pytest.fixture
def agent_script(tmp_path: Path) -> Path:
    """The scripted agent, in a directory of its own that sessions may read."""
    path = tmp_path / "agent" / "agent.py"
    path.parent.mkdir()
    path.write_text(AGENT)
    return path


@pytest.fixture
def settings(jobs_redis_url: str, tmp_path: Path) -> Settings:
    return Settings(redis_url=jobs_redis_url, data_dir=tmp_path)


@pytest.fixture
def store(redis: ArqRedis) -> RecordStore:
    return RecordStore(redis)


@pytest.fixture
def tickets(store: RecordStore) -> EngineTickets:
    return EngineTickets(store)


@pytest.fixture
def launcher(redis: ArqRedis) -> ArqSessionLauncher:
    return ArqSessionLauncher(redis)


@pytest.fixture
def session_jobs(
    settings: Settings,
    redis: ArqRedis,
    store: RecordStore,
    app_private_key: str,
    origin: Path,
    tmp_path: Path,
    github: FakeGitHub,
    agent_script: Path,
    observed: Path,
) -> SessionJobs:
    parent_env = {
        "PATH": os.environ["PATH"],
        "LANG": "C.UTF-8",
        "BALLET_PRIVATE_KEY": app_private_key,  # must never reach a session
    }
    forges = GitHubApp(
        GitHubAppCredentials(app_id=APP_ID, private_key=app_private_key, api_url=API),
        redis,
        write_spacing_seconds=0.01,
    )
    return session_jobs_for(
        settings,
        redis,
        store,
        forges.for_installation,
        parent_env=parent_env,
        clone_urls=lambda repo: origin.as_uri(),
        installations=forges.installations,
        options=SessionOptions(
            grace_seconds=0.5,
            isolation=Isolation(readonly_paths=(agent_script.parent,), test_writable=(observed,)),
        ),
        heartbeat_seconds=0.2,
        ballet_login=github.bot_login,
    )


@pytest.fixture
def services(
    settings: Settings, redis: ArqRedis, tickets: EngineTickets, session_jobs: SessionJobs
) -> Services:
    return services_for(
        settings, redis, LoggingConsumer(), tickets=tickets, session_jobs=session_jobs
    )
