"""Reviews with inline comments, placed in the pull request's real diff, read back one
review at a time or all of a pull request's, and replies in their threads; every
response parses with githubkit's models (GitHub's OpenAPI description)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.github.webhook_models import Payload
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import RequestFailed
from githubkit_schemas.latest.models import (
    PullRequestReview,
    PullRequestReviewComment,
    ReviewComment,
)

from .conftest import (
    Receiver,
    authed_url,
    installation_client,
    make_repo,
    push_branch,
    settle,
    user_client,
)
from .test_webhooks import _missing, _real

ORIGINAL = "".join(f"line {n}\n" for n in range(1, 31))
# Line 10 changed and a line added after line 25: two hunks.
CHANGED = ORIGINAL.replace("line 10\n", "line ten\n").replace("line 25\n", "line 25\nline 25b\n")


def items(data: object) -> list[Any]:
    assert isinstance(data, list)
    return data


def _pull(sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path) -> tuple[int, str]:
    make_repo(admin, files={"README.md": "# demo\n", "app.txt": ORIGINAL})
    url = authed_url(sandbox, "sandbox-user:writer")
    head = push_branch(tmp_path, url, "topic", {"app.txt": CHANGED})
    gh = installation_client(sandbox)
    pr = gh.rest.pulls.create("octo", "demo", title="t", head="topic", base="main").parsed_data
    return pr.number, head


def _error(call: pytest.ExceptionInfo[RequestFailed]) -> tuple[int, Any]:
    response = call.value.response
    return response.status_code, response.json()


def test_a_review_with_inline_comments_is_placed_in_the_diff(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    number, head = _pull(sandbox, admin, tmp_path)
    reviewer = user_client(sandbox, "reader")
    review = reviewer.rest.pulls.create_review(
        "octo",
        "demo",
        number,
        event="REQUEST_CHANGES",
        body="Please look again.",
        comments=[
            {"path": "app.txt", "line": 10, "body": "Why a word?"},
            {"path": "app.txt", "start_line": 24, "line": 26, "body": "And these three."},
            {"path": "app.txt", "line": 10, "side": "LEFT", "body": "The old one was fine."},
        ],
    ).parsed_data
    assert isinstance(review, PullRequestReview)
    assert (review.state, review.commit_id, review.body) == (
        "CHANGES_REQUESTED",
        head,
        "Please look again.",
    )
    again = reviewer.rest.pulls.get_review("octo", "demo", number, review.id).parsed_data
    assert isinstance(again, PullRequestReview)
    assert again.id == review.id

    listed = items(
        reviewer.rest.pulls.list_comments_for_review("octo", "demo", number, review.id).parsed_data
    )
    assert all(isinstance(c, ReviewComment) for c in listed)
    word, three, old = listed
    assert (word.path, word.line, word.side, word.start_line) == ("app.txt", 10, "RIGHT", None)
    assert (word.position, word.commit_id, word.pull_request_review_id) == (5, head, review.id)
    assert word.user is not None and word.user.login == "reader"
    assert word.html_url.endswith(f"/pull/{number}#discussion_r{word.id}")
    lines = word.diff_hunk.split("\n")
    assert re.match(r"^@@ -7,7 \+7,7 @@", lines[0]), lines[0]
    assert lines[1:] == [" line 7", " line 8", " line 9", "-line 10", "+line ten"]
    # The second hunk: its header counts as a line of the diff, as GitHub counts.
    assert (three.start_line, three.line, three.start_side, three.position) == (24, 26, "RIGHT", 13)
    assert re.match(r"^@@ -23,6 \+23,7 @@", three.diff_hunk)
    assert three.diff_hunk.endswith("\n line 24\n line 25\n+line 25b")
    assert (old.side, old.line, old.position) == ("LEFT", 10, 4)
    assert old.diff_hunk.endswith("\n-line 10")

    everything = items(reviewer.rest.pulls.list_review_comments("octo", "demo", number).parsed_data)
    assert all(isinstance(c, PullRequestReviewComment) for c in everything)
    assert [c.id for c in everything] == [word.id, three.id, old.id]
    second_page = reviewer.rest.pulls.list_comments_for_review(
        "octo", "demo", number, review.id, per_page=2, page=2
    ).parsed_data
    assert [c.id for c in items(second_page)] == [old.id]
    assert reviewer.rest.pulls.get("octo", "demo", number).parsed_data.review_comments == 3


def test_a_review_on_an_earlier_commit_and_comments_off_the_diff(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    number, first = _pull(sandbox, admin, tmp_path)
    url = authed_url(sandbox, "sandbox-user:writer")
    later = push_branch(tmp_path, url, "topic", {"other.txt": "x\n"}, start="topic")
    reviewer = user_client(sandbox, "reader")
    on_first = reviewer.rest.pulls.create_review(
        "octo",
        "demo",
        number,
        commit_id=first,
        event="COMMENT",
        comments=[{"path": "app.txt", "line": 10, "body": "Still here."}],
    ).parsed_data
    assert on_first.commit_id == first
    (comment,) = items(
        reviewer.rest.pulls.list_comments_for_review(
            "octo", "demo", number, on_first.id
        ).parsed_data
    )
    assert comment.commit_id == first
    latest = reviewer.rest.pulls.create_review("octo", "demo", number, event="APPROVE")
    assert latest.parsed_data.commit_id == later

    refused = [
        ({"path": "app.txt", "line": 1, "body": "x"}, ["Line could not be resolved"]),
        ({"path": "README.md", "line": 1, "body": "x"}, ["Path could not be resolved"]),
    ]
    for draft, errors in refused:
        with pytest.raises(RequestFailed) as off:
            reviewer.rest.pulls.create_review(
                "octo", "demo", number, event="COMMENT", body="b", comments=[draft]
            )
        status, body = _error(off)
        assert (status, body["message"], body["errors"]) == (422, "Unprocessable Entity", errors)
    with pytest.raises(RequestFailed) as by_position:
        reviewer.rest.pulls.create_review(
            "octo",
            "demo",
            number,
            event="COMMENT",
            comments=[{"path": "app.txt", "position": 5, "body": "x"}],
        )
    status, body = _error(by_position)
    assert status == 422 and "position" in body["message"]
    with pytest.raises(RequestFailed) as unknown:
        reviewer.rest.pulls.get_review("octo", "demo", number, 999999)
    assert _error(unknown)[0] == 404
    # A refused review left nothing behind.
    state = admin.get("/_sandbox/repos/octo/demo/state").json()
    assert len(state["reviews"]) == 2 and len(state["review_comments"]) == 1


def test_replies_join_the_thread_and_are_reviews_of_their_own(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path, receiver: Receiver
) -> None:
    number, head = _pull(sandbox, admin, tmp_path)
    reviewer = user_client(sandbox, "reader")
    review = reviewer.rest.pulls.create_review(
        "octo",
        "demo",
        number,
        event="COMMENT",
        comments=[{"path": "app.txt", "line": 10, "body": "Why a word?"}],
    ).parsed_data
    (root,) = items(
        reviewer.rest.pulls.list_comments_for_review("octo", "demo", number, review.id).parsed_data
    )
    app = installation_client(sandbox)
    made = app.rest.pulls.create_reply_for_review_comment(
        "octo", "demo", number, root.id, body="Words read better."
    )
    assert made.status_code == 201
    answer = made.parsed_data
    assert isinstance(answer, PullRequestReviewComment)
    assert (answer.in_reply_to_id, answer.path, answer.line) == (root.id, "app.txt", 10)
    assert answer.diff_hunk == root.diff_hunk
    assert answer.pull_request_review_id not in (None, review.id)
    again = reviewer.rest.pulls.create_reply_for_review_comment(
        "octo", "demo", number, answer.id, body="Fair."
    ).parsed_data
    assert again.in_reply_to_id == root.id

    with pytest.raises(RequestFailed) as missing:
        app.rest.pulls.create_reply_for_review_comment("octo", "demo", number, 424242, body="x")
    assert _error(missing)[0] == 404
    anonymous = admin.post(
        f"/repos/octo/demo/pulls/{number}/comments/{root.id}/replies", json={"body": "x"}
    )
    assert anonymous.status_code == 401
    # Reading is as open as the repository: a public one, to anyone.
    listed = admin.get(f"/repos/octo/demo/pulls/{number}/comments")
    assert [c["id"] for c in listed.json()] == [root.id, answer.id, again.id]
    assert "in_reply_to_id" not in listed.json()[0]

    settle(admin)
    submitted = [r.payload for r in receiver.received if r.event == "pull_request_review"]
    assert [(p["review"]["user"]["login"], p["review"]["state"]) for p in submitted] == [
        ("reader", "commented"),
        ("ballet[bot]", "commented"),
        ("reader", "commented"),
    ]
    first = submitted[0]
    assert (first["review"]["id"], first["review"]["commit_id"], first["review"]["body"]) == (
        review.id,
        head,
        None,
    )
    read = Payload.model_validate(first).review
    assert read is not None and (read.id, read.commit_id, read.body) == (review.id, head, None)


def test_the_review_webhook_is_shaped_like_githubs(
    sandbox: BackgroundSandbox,
    admin: httpx.Client,
    tmp_path: Path,
    receiver: Receiver,
    webhooks_dir: Path,
) -> None:
    number, head = _pull(sandbox, admin, tmp_path)
    reviewer = user_client(sandbox, "reader")
    reviewer.rest.pulls.create_review("octo", "demo", number, event="COMMENT", body="Looks fine.")
    settle(admin)
    (payload,) = [r.payload for r in receiver.received if r.event == "pull_request_review"]
    real = _real(webhooks_dir, "pull_request_review", "submitted")
    assert _missing(real, payload, "pull_request_review.submitted") == []
    read = Payload.model_validate(payload).review
    assert read is not None and (read.commit_id, read.body) == (head, "Looks fine.")
