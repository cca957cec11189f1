"""The stack with GitHub's double as a process of its own (`ballet sandbox serve`), as
bench/many_tickets.py runs it: Ballet is given the App the sandbox's env file names,
and everything else is said to the sandbox over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.demo.stack import running_stack
from scenarios import assert_merged_cleanly, e2e_redis, merged, new_repo, ticket, wait_until

pytestmark = pytest.mark.anyio


async def test_a_ticket_merges_with_the_sandbox_in_a_process_of_its_own(
    redis_url: str, tmp_path: Path
) -> None:
    url = await e2e_redis(redis_url)
    log = tmp_path / "sandbox.log"
    async with running_stack(tmp_path, redis_url=url, sandbox_log=log) as stack:
        assert stack.sandbox is None and stack.sandbox_process is not None
        sandbox = stack.sandbox_process
        repo = await new_repo(stack, "apart")
        number = await ticket(stack, repo)
        view = await wait_until(stack, repo, number, merged, timeout=90)
        await assert_merged_cleanly(stack, view, repo, number)
        assert await stack.webhooks_waiting() >= 0
    assert sandbox.poll() is not None  # stopped with the stack
    assert "Traceback" not in log.read_text()
