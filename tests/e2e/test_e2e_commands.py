"""Slash commands a person types while a ticket runs: questions get answers,
mistakes get help, and a reader cannot stop the work."""

from __future__ import annotations

import pytest
from ballet.core.commands import HELP_TEXT
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import (
    assert_merged_cleanly,
    comment,
    merged,
    new_repo,
    outcomes,
    replied_to,
    replies_to,
    status_is,
    ticket,
    wait_until,
)

pytestmark = pytest.mark.anyio


def reactions(view: View, comment_id: int) -> list[str]:
    found = next(c for c in view.state["comments"] if c["id"] == comment_id)
    return [r["content"] for r in found["reactions"]]


async def test_status_help_and_an_unknown_verb_get_replies(stack: Stack) -> None:
    repo = await new_repo(stack, "commands")
    number = await ticket(stack, repo, directives="demo:sleep-implement=4@1")
    await wait_until(stack, repo, number, status_is("running"), timeout=30)

    status = await comment(stack, repo, number, "bob", "/ballet status")
    helped = await comment(stack, repo, number, "bob", "/ballet help")
    unknown = await comment(stack, repo, number, demo.AUTHOR, "/ballet frobnicate now")
    for asked in (status, helped, unknown):
        view = await wait_until(stack, repo, number, replied_to(asked["id"]), timeout=30)

    [said] = replies_to(view, status["id"])
    assert "Status: 🏃 running, stage `implement`, iteration 1, attempt 1." in said
    [said] = replies_to(view, helped["id"])
    assert HELP_TEXT in said
    [said] = replies_to(view, unknown["id"])
    assert "unknown command `frobnicate`." in said and HELP_TEXT in said
    # Anyone may ask for status and help (bob can only read); a mistake gets no 👀.
    # The 👀 comes after the reply, so wait for it.
    view = await wait_until(
        stack,
        repo,
        number,
        lambda v: all(reactions(v, c["id"]) for c in (status, helped)),
        timeout=30,
    )
    assert reactions(view, status["id"]) == ["eyes"]
    assert reactions(view, helped["id"]) == ["eyes"]
    assert reactions(view, unknown["id"]) == []

    view = await wait_until(stack, repo, number, merged, timeout=90)
    await assert_merged_cleanly(stack, view, repo, number)


async def test_a_reader_cannot_cancel_and_the_ticket_goes_on(stack: Stack) -> None:
    repo = await new_repo(stack, "reader-cancel")
    number = await ticket(stack, repo, directives="demo:sleep-implement=3@1")
    await wait_until(stack, repo, number, status_is("running"), timeout=30)

    refused = await comment(stack, repo, number, "bob", "/ballet cancel")
    view = await wait_until(stack, repo, number, replied_to(refused["id"]), timeout=30)

    [said] = replies_to(view, refused["id"])
    assert (
        "@bob `/ballet cancel` refused: it needs write permission on the repository"
        " (you have read)" in said
    )
    assert reactions(view, refused["id"]) == []
    assert view.record is not None and view.record.status == "running"

    view = await wait_until(stack, repo, number, merged, timeout=90)
    assert view.record is not None and view.record.ended_by is None
    assert all(outcome != "cancelled" for _, _, outcome in outcomes(view))
    await assert_merged_cleanly(stack, view, repo, number)
