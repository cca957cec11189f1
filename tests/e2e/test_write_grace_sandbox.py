"""A session slower than the write grace shows that it runs: its deferred "in
progress" check run and tracking edit are written by the deferred drain job
(an instant session's are superseded: tests/github/test_drain_deferred.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.demo.stack import running_stack
from ballet.demo.watch import View
from scenarios import e2e_redis, new_repo, ticket, wait_until

pytestmark = pytest.mark.anyio


def review_shown_running(view: View) -> bool:
    runs = [r for r in view.state["check_runs"] if r["name"] == "ballet/review"]
    record = view.record
    return (
        any(r["status"] == "in_progress" for r in runs)
        and record is not None
        and record.pr_number is not None
        and record.stage == "review"
        and record.status == "running"
    )


async def test_a_session_past_the_grace_has_its_start_written(
    redis_url: str, tmp_path: Path
) -> None:
    url = await e2e_redis(redis_url)
    async with running_stack(tmp_path, redis_url=url, write_grace_seconds=1.0) as stack:
        repo = await new_repo(stack, "grace")
        # Review hangs: only the deferred job can write its start, nothing supersedes it.
        number = await ticket(stack, repo, directives="demo:hang-review=300")
        await wait_until(stack, repo, number, review_shown_running, timeout=90)
