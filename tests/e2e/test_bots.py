"""Bots neither start nor steer a ticket, unless the operator trusts them.

A bot account with write permission on the repository (`acme-ci[bot]`, a Bot in
the sandbox as on GitHub) labels an issue, answers a question, pauses, reviews:
each is refused with a reply saying why and what to do, and the ticket is as it
was. With the bot in BALLET_TRUSTED_BOTS, its label starts a ticket like a
person's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from ballet.demo import repo as demo
from ballet.demo.run import file_ticket
from ballet.demo.stack import Stack, running_stack
from ballet.demo.watch import View, look
from markers import find_marker
from scenarios import (
    assert_merged_cleanly,
    comment,
    e2e_redis,
    lands_alone,
    merged,
    replied_to,
    replies_to,
    ticket,
    wait_until,
    waiting_for,
)

pytestmark = pytest.mark.anyio

BOT = "acme-ci[bot]"
REFUSED = "is a bot"


@pytest.fixture
async def trusting_stack(redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    url = await e2e_redis(redis_url)
    async with running_stack(tmp_path, redis_url=url, trusted_bots=BOT.upper()) as running:
        yield running


async def bots_repo(stack: Stack, name: str) -> str:
    people = {demo.AUTHOR: "write", BOT: "write"}
    request = demo.new_repo_request(
        name, ballet_yml=lands_alone(demo.BALLET_YML), collaborators=people
    )
    created = await stack.create_repo(request)
    full_name: str = created["full_name"]
    return full_name


async def file_issue(stack: Stack, repo: str) -> int:
    async with stack.user(demo.AUTHOR) as user:
        made = await user.post(
            f"/repos/{repo}/issues", json={"title": demo.ISSUE_TITLE, "body": demo.ISSUE_BODY}
        )
    made.raise_for_status()
    number: int = made.json()["number"]
    return number


async def label_as(stack: Stack, login: str, repo: str, number: int) -> None:
    async with stack.user(login) as user:
        labelled = await user.post(
            f"/repos/{repo}/issues/{number}/labels", json={"labels": ["ballet"]}
        )
    labelled.raise_for_status()


async def review_as(stack: Stack, login: str, repo: str, pr: int, event: str) -> None:
    async with stack.user(login) as user:
        review = {"event": event, "body": "Rewrite it in Rust."}
        made = await user.post(f"/repos/{repo}/pulls/{pr}/reviews", json=review)
    assert made.status_code == 200, made.text


def notices(view: View, number: int, kind: str) -> list[str]:
    """Ballet's notice comments on issue or PR `number` whose marker ends with `kind`."""
    return [
        c["body"]
        for c in view.comments_on(number)
        if (marker := find_marker(c["body"])) and ":notice:" in marker and marker.endswith(kind)
    ]


async def test_a_bots_label_starts_no_ticket_and_the_bot_is_told_why(stack: Stack) -> None:
    repo = await bots_repo(stack, "bot-label")
    number = await file_issue(stack, repo)
    await label_as(stack, BOT, repo, number)
    view = await wait_until(stack, repo, number, lambda v: bool(notices(v, number, ":start")))
    (told,) = notices(view, number, ":start")
    assert f"@{BOT} Ballet did not start this ticket: `{BOT}` is a bot" in told
    assert "BALLET_TRUSTED_BOTS" in told
    assert view.record is None and view.state["pulls"] == []
    assert not any(label.startswith("ballet:") for label in view.issue(number)["labels"])


async def test_a_bots_commands_and_reviews_are_refused_and_change_nothing(stack: Stack) -> None:
    repo = await bots_repo(stack, "bot-steer")
    number = await ticket(stack, repo, directives="demo:implement=question@1")
    view = await wait_until(stack, repo, number, waiting_for("question"), timeout=90)
    before = view.record
    assert before is not None and before.pr_number is not None
    for verb, rest in (("answer", " Round half to even."), ("pause", "")):
        said = await comment(stack, repo, number, BOT, f"/ballet {verb}{rest}")
        view = await wait_until(stack, repo, number, replied_to(said["id"]))
        (reply,) = replies_to(view, said["id"])
        assert f"@{BOT} `/ballet {verb}` refused:" in reply
        assert f"`{BOT}` {REFUSED}" in reply and "BALLET_TRUSTED_BOTS" in reply

    pr = before.pr_number
    await review_as(stack, BOT, repo, pr, "APPROVE")
    view = await wait_until(stack, repo, number, lambda v: bool(notices(v, pr, f":{BOT}")))
    await review_as(stack, BOT, repo, pr, "REQUEST_CHANGES")

    def told_of_both(v: View) -> bool:
        return any("(changes requested) does not count" in b for b in notices(v, pr, f":{BOT}"))

    view = await wait_until(stack, repo, number, told_of_both)
    (told,) = notices(view, pr, f":{BOT}")  # one comment, edited: not one per review
    assert f"The review by `{BOT}` (changes requested) does not count" in told
    after = (await look(stack, repo, number)).record
    assert after is not None
    assert (after.status, after.stage, after.iteration, after.attempt) == (
        before.status,
        before.stage,
        before.iteration,
        before.attempt,
    )
    assert after.waiting == before.waiting and after.history == before.history
    assert after.returned == () and after.pending_reviews == ()

    # A person's answer still settles the question the bot could not.
    await comment(stack, repo, number, demo.AUTHOR, "/ballet answer Round half to even.")
    view = await wait_until(stack, repo, number, merged, timeout=120)
    await assert_merged_cleanly(stack, view, repo, number)


async def test_a_bot_the_operator_trusts_starts_a_ticket(trusting_stack: Stack) -> None:
    stack = trusting_stack
    repo = await bots_repo(stack, "bot-trusted")
    number = await file_ticket(stack, repo, demo.ISSUE_TITLE, demo.ISSUE_BODY, BOT)
    view = await wait_until(stack, repo, number, merged, timeout=120)
    assert view.record is not None and view.record.ticket.author == BOT
    assert not notices(view, number, ":start")
    await assert_merged_cleanly(stack, view, repo, number)
