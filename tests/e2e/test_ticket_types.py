"""Ticket types: a `docs` ticket on a shorter pipeline, a spike ending in a report."""

from __future__ import annotations

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from scenarios import (
    assert_merged_cleanly,
    assert_tracking,
    ballet_labels,
    merged,
    new_repo,
    outcomes,
    status_is,
    ticket,
    wait_until,
)

pytestmark = pytest.mark.anyio

TYPED = (
    demo.BALLET_YML.replace(
        "pipelines:\n",
        "types:\n  - {label: docs, pipeline: docs}\n  - {label: spike, pipeline: spike}\n"
        "pipelines:\n",
    )
    + """\
  docs:
    stages:
      - {id: implement, kind: agent, next: {done: integrate}}
      - {id: integrate, kind: platform, action: merge, next: {merged: $done, returned: implement}}
  spike:
    branch: null
    stages:
      - {id: research, kind: agent, next: {done: $done}}
"""
)


async def test_docs_ticket_runs_the_shorter_pipeline(stack: Stack) -> None:
    repo = await new_repo(stack, "docs-type", TYPED)
    number = await ticket(stack, repo, labels=("docs",))

    view = await wait_until(stack, repo, number, merged, timeout=90)

    assert view.record is not None
    assert view.record.ticket_type == "docs" and view.record.pipeline.name == "docs"
    assert outcomes(view) == [("implement", 1, "done"), ("integrate", 1, "merged")]
    await assert_merged_cleanly(stack, view, repo, number)


async def test_spike_ends_with_a_knowledge_report_on_the_issue(stack: Stack) -> None:
    repo = await new_repo(stack, "spike-type", TYPED)
    number = await ticket(stack, repo, labels=("spike",), title="How is the calculator built?")

    view = await wait_until(stack, repo, number, status_is("done"), timeout=60)

    assert outcomes(view) == [("research", 1, "done")]
    on_issue = [c["body"] for c in view.comments_on(number)]
    assert any("Knowledge report" in body and "calc.py" in body for body in on_issue)
    # No branch, no pull request: a spike changes no code.
    assert set(view.state["branches"]) == {"main"}
    assert view.state["pulls"] == []
    assert ballet_labels(view, number) == {"ballet:done"}
    assert view.state["check_runs"] == [] or all(
        not r["name"].startswith("ballet/") for r in view.state["check_runs"]
    )
    assert_tracking(view, number)
