"""How a ticket lands (issue 33): a file without `pipelines:` runs the built-in
default; the seed's Integrate, an agent stage with the integrator skill, ends in
Ballet's landing of the pull request."""

from __future__ import annotations

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from scenarios import assert_merged_cleanly, merged, new_repo, outcomes, ticket, wait_until

pytestmark = pytest.mark.anyio

NO_PIPELINES = demo.SCRIPT_RUNTIME_YML


async def test_a_file_without_pipelines_runs_the_default_to_merged(stack: Stack) -> None:
    repo = await new_repo(stack, "no-pipelines", ballet_yml=NO_PIPELINES)
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, merged, timeout=90)

    assert outcomes(view) == [
        ("implement", 1, "done"),
        ("review", 1, "approve"),
        ("verify", 1, "pass"),
        ("integrate", 1, "merged"),
    ]
    await assert_merged_cleanly(stack, view, repo, number)


# The seeds' ticket pipeline, written as .ballet.yml: Integrate is an agent stage, and
# its `merged` goes to `done` as the seed writes it (no `$`).
SEED = (
    demo.SCRIPT_RUNTIME_YML
    + """\
pipelines:
  default:
    stages:
      - {id: implement, kind: agent, skills: [implementer], next: {done: review}}
      - {id: review, kind: agent, skills: [reviewer],
         next: {approve: verify, changes_requested: implement}}
      - {id: verify, kind: agent, skills: [verifier], next: {pass: integrate, fail: implement}}
      - {id: integrate, kind: agent, skills: [integrator],
         next: {merged: done, returned: implement}}
"""
)


async def test_the_seeds_template_integrates_and_lands(stack: Stack) -> None:
    repo = await new_repo(stack, "seed-template", ballet_yml=SEED)
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, merged, timeout=90)

    # The integrator's session, then Ballet's landing as the stage's outcome.
    assert outcomes(view) == [
        ("implement", 1, "done"),
        ("review", 1, "approve"),
        ("verify", 1, "pass"),
        ("integrate", 1, "done"),
        ("integrate", 1, "merged"),
    ]
    await assert_merged_cleanly(stack, view, repo, number)
