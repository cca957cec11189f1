"""A pipeline stage that waits for CI: red sends the work back, green lets it on.

CI finishing while a session runs is remembered without reading GitHub; the
head's verdict is read once a checks wait needs it (docs/performance.md).
"""

from __future__ import annotations

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from scenarios import assert_merged_cleanly, merged, new_repo, outcomes, ticket, wait_until

pytestmark = pytest.mark.anyio

# The demo's pipeline with CI waited for where the verify session was.
CHECKS_YML = demo.BALLET_YML.replace("approve: verify", "approve: ci").replace(
    """      - {id: verify, kind: agent, skills: [verifier], timeout_minutes: 5,
         next: {pass: integrate, fail: implement}}""",
    """      - {id: ci, kind: platform, wait_for: checks, timeout_minutes: 10,
         next: {pass: integrate, fail: implement}}""",
)


async def test_a_checks_stage_returns_red_ci_and_passes_green(stack: Stack) -> None:
    assert "wait_for: checks" in CHECKS_YML and "id: verify" not in CHECKS_YML
    repo = await new_repo(stack, "checks-wait", ballet_yml=CHECKS_YML)
    # Review takes its time, so CI on implement's head finishes while it runs.
    directives = "demo:break-ci=yes@1\ndemo:sleep-review=3"
    number = await ticket(stack, repo, directives=directives)

    view = await wait_until(stack, repo, number, merged, timeout=180)

    runs = outcomes(view)
    assert ("ci", 1, "fail") in runs and ("ci", 2, "pass") in runs, runs
    assert ("integrate", 2, "merged") in runs, runs
    assert view.record is not None
    summaries = {r.outcome: r.summary for r in view.record.history if r.stage == "ci"}
    # Red was known the moment CI finished, during review; green was read for the wait.
    assert summaries["fail"] == "github-actions: failure (finished before the wait)"
    assert summaries["pass"] == "ci: success", summaries  # the check run, as read
    await assert_merged_cleanly(stack, view, repo, number)
