"""End-to-end fixtures: the whole product on loopback, one stack per test.

A scenario acts as people do (files issues, labels, comments through the
sandbox's REST API) and asserts on what they would see on GitHub. The stack
is `ballet.demo.stack`, the same one `ballet sandbox demo` runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from ballet.demo.stack import Stack, running_stack
from scenarios import BARE_REDIS_DB, e2e_redis


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def stack(redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path, redis_url=await e2e_redis(redis_url)) as running:
        yield running


@pytest.fixture
async def bare_stack(redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    """The stack without its in-process worker: the test starts `ballet worker`s."""
    url = await e2e_redis(redis_url, BARE_REDIS_DB)
    async with running_stack(tmp_path, redis_url=url, worker=False) as running:
        yield running
