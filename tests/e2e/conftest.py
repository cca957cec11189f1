"""End-to-end fixtures: the whole product on loopback, one stack per test.

A scenario acts as people do (files issues, labels, comments through the
sandbox's REST API) and asserts on what they would see on GitHub. The stack
is `ballet.demo.stack`, the same one `ballet sandbox demo` runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from ballet.demo.stack import Stack, running_stack
from ballet.queue import connect

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def stack(redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    url = urlunsplit(urlsplit(redis_url)._replace(path=f"/{REDIS_DB}"))
    pool = await connect(url)
    await pool.flushdb()
    await pool.aclose()
    async with running_stack(tmp_path, redis_url=url) as running:
        yield running


# The database of the tests that run `ballet worker` processes of their own.
BARE_REDIS_DB = 6


@pytest.fixture
async def bare_stack(redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    """The stack without its in-process worker: the test starts `ballet worker`s."""
    url = urlunsplit(urlsplit(redis_url)._replace(path=f"/{BARE_REDIS_DB}"))
    pool = await connect(url)
    await pool.flushdb()
    await pool.aclose()
    async with running_stack(tmp_path, redis_url=url, worker=False) as running:
        yield running
