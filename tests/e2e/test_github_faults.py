"""GitHub on a bad day: tickets complete while a fifth of the App's requests fail.

The sandbox fails 20 % of the App's REST requests (seeded, so the run is
repeatable) with a 502, a secondary rate limit or a request held and then
answered 504. Every ticket still merges with one pull request, one tracking
comment, one report per stage run and one check run per name, and the
requests it took stay within a bound of the fault-free run's.
`bench/faults.py` runs the same with 20 tickets.
"""

from __future__ import annotations

import pytest
from ballet.demo.load import run_tickets
from ballet.demo.stack import Stack
from scenarios import assert_merged_cleanly

pytestmark = pytest.mark.anyio

TICKETS = 3
FAULTS = {
    "rate": 0.2,
    "kinds": ["502", "secondary_rate_limit", "timeout"],
    "seed": 1,
    # GitHub's own waits (60 s, 10 s) shortened so the test stays short.
    "retry_after_seconds": 1,
    "timeout_seconds": 0.5,
}


async def test_tickets_complete_under_github_faults_with_bounded_requests(stack: Stack) -> None:
    calm = await run_tickets(stack, "calm", TICKETS)
    stormy = await run_tickets(stack, "stormy", TICKETS, faults=FAULTS)

    assert stormy.faults is not None
    injected = stormy.faults["injected"]
    assert set(injected) == {"502", "secondary_rate_limit", "timeout"}, injected
    assert stormy.injected >= 10  # a real storm, not a drizzle
    for repo, number, view in [*calm.views, *stormy.views]:
        await assert_merged_cleanly(stack, view, repo, number)
        assert len(view.state["pulls"]) == 1
        assert view.record is not None and not view.record.questions
    # Retries are bounded: the storm costs requests, but not without limit.
    assert calm.injected == 0
    assert stormy.total <= 3 * calm.total, (stormy.total, calm.total)
    print("\n" + calm.describe("fault-free") + "\n" + stormy.describe("20 % faults"))
