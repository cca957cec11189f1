"""The GitHub requests one ticket costs, counted by the sandbox: a regression fails here.

Counts, not times, so they are deterministic: the sandbox logs every request
the App makes. A ticket's requests are those on its repository made from the
labelling until the App has gone quiet after the merge (App-level requests,
such as minting a token with the App's JWT, are not the installation's
budget). GitHub charges every REST request but a 304 (a conditional GET that
found nothing new), and git over HTTP counts apart; the writes are what its
secondary rate limit counts. docs/performance.md has the figures.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from ballet.demo.stack import Stack, running_stack
from scenarios import e2e_redis, merged, new_repo, ticket, wait_until

pytestmark = pytest.mark.anyio

WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
# The budget of one default-pipeline ticket without rework, and what one rework
# loop may add (issue 24: at most 30 charged requests and 18 writes, at most 6
# more writes per rework): the branch's start and deletion are git pushes, the
# issue gets no pointer comment (GitHub links the PR by its "Closes #N"), and an
# instant session's "in progress" check run (an instant merge's tracking edit) is
# superseded by its end within the write grace (core/outbox.py). The grace here is
# long: on a loaded machine a demo session can take longer than the default 5 s,
# and then its start is written, as for a real agent (docs/performance.md).
# Measured 28-30 charged and 18 writes, a rework 5 and 6 more. Whether a
# conditional GET finds its answer changed (a 304 or not) and whether CI has
# finished when the merge comes depend on timing: charged requests may vary by one
# or two, the writes not at all.
CHARGED = 30
WRITTEN = 18
REWORK_CHARGED = 8
REWORK_WRITTEN = 6
GRACE = 60.0  # seconds: longer than any demo session, however loaded the machine


async def requests_so_far(stack: Stack) -> list[dict[str, Any]]:
    async with stack.admin() as admin:
        found: list[dict[str, Any]] = (await admin.get("/_sandbox/requests")).json()
        return found


async def quiet(stack: Stack) -> int:
    """How many requests the App has made once it makes no more for a while."""
    async with stack.admin() as admin:
        await admin.post("/_sandbox/settle")
    count = len(await requests_so_far(stack))
    while True:
        await asyncio.sleep(1.5)
        now = len(await requests_so_far(stack))
        if now == count:
            return count
        count = now


async def ticket_cost(stack: Stack, name: str, directives: str = "") -> tuple[int, int]:
    """(charged requests, writes) of one ticket from labelling to merged."""
    repo = await new_repo(stack, name)
    first = await quiet(stack)  # installing the repository is not the ticket's cost
    number = await ticket(stack, repo, directives=directives)
    await wait_until(stack, repo, number, merged, timeout=120)
    await quiet(stack)
    own = f"/repos/{repo}"
    mine = [
        r
        for r in (await requests_so_far(stack))[first:]
        if (r["path"] == own or r["path"].startswith(own + "/"))
        # The reconciler's listing of a repository's live tickets by label, once
        # per Redis loss (here: the stack's start), is no ticket's cost.
        and r["path"] != f"{own}/issues"
    ]
    rest = [r for r in mine if ".git/" not in r["path"]]
    charged = sum(r["status"] != 304 for r in rest)
    writes = sum(r["method"] in WRITES for r in rest)
    print(f"{name}: {charged} charged, {writes} writes")
    return charged, writes


@pytest.fixture
async def stack(redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    url = await e2e_redis(redis_url)
    async with running_stack(tmp_path, redis_url=url, write_grace_seconds=GRACE) as running:
        yield running


async def test_one_ticket_stays_within_its_request_budget(stack: Stack) -> None:
    charged, writes = await ticket_cost(stack, "budget")
    assert charged <= CHARGED and writes <= WRITTEN, (charged, writes)
    rework_charged, rework_writes = await ticket_cost(
        stack, "budget-rework", "demo:review=changes_requested@1"
    )
    # Within the budget of a ticket plus one loop's: the two tickets' timings differ
    # (a 304 here, a wait for CI there), so their difference would be noise.
    assert rework_charged <= CHARGED + REWORK_CHARGED, (rework_charged, charged)
    assert rework_writes <= WRITTEN + REWORK_WRITTEN, (rework_writes, writes)
