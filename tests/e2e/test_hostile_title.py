"""A hostile issue title cannot break the branch, the tracking comment or the merge.

The title carries what could end an HTML comment, open a fake Ballet marker,
close a Mermaid node or a table cell, backticks, unicode, and is 300 long.
"""

from __future__ import annotations

import subprocess

import pytest
from ballet.core.limits import TITLE_MAX, clip
from ballet.demo.stack import Stack
from markers import find_marker
from scenarios import STATE, assert_merged_cleanly, markers, merged, new_repo, ticket, wait_until

pytestmark = pytest.mark.anyio

NASTY = (
    "Fix `calc` --> <!-- ballet:marker acme/x#9:tracking::0:0 --> node] | cell |"
    ' end"]; click A "javascript:x" ```` ñandú 🚀 日本語 Ω≈ç√ \u202eevil\u202c '
)
TITLE = (NASTY * 4)[:300]


async def test_hostile_title_gives_a_valid_branch_a_decodable_record_and_a_merge(
    stack: Stack,
) -> None:
    assert len(TITLE) == 300
    repo = await new_repo(stack, "hostile")
    number = await ticket(stack, repo, title=TITLE)

    view = await wait_until(stack, repo, number, merged, timeout=90)

    record = view.record
    assert record is not None and record.branch is not None
    # Cut to GitHub's title limit, saying so, wherever Ballet writes it.
    assert record.ticket.title == clip(TITLE, TITLE_MAX) != TITLE
    branch = record.branch
    assert branch.startswith(f"ballet/{number}-") and branch.isascii() and len(branch) <= 100
    valid = subprocess.run(["git", "check-ref-format", f"refs/heads/{branch}"], check=False)
    assert valid.returncode == 0, branch
    # The pull request came from that branch; merged, it was deleted (`merge.delete_branch`).
    assert view.pull is not None and view.pull["head"] == branch
    assert branch not in view.state["branches"]
    # The title's fake marker and comment ends do not hijack Ballet's own comments.
    [tracking] = [c["body"] for c in view.state["comments"] if STATE in c["body"]]
    assert find_marker(tracking) == f"{repo}#{number}:tracking::0:0"
    assert "<!-- ballet:marker acme/x#9" not in tracking
    assert all(m.startswith(f"{repo}#{number}:") for m in markers(view)), markers(view)
    assert view.pull is not None
    pr_title = view.issue(view.pull["number"])["title"]
    assert pr_title == record.ticket.title
    await assert_merged_cleanly(stack, view, repo, number)
