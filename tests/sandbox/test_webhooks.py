"""Webhooks: signed, in order, shaped like GitHub's real deliveries, logged and redeliverable."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from ballet.sandbox.webhooks import WebhookQueue

from .conftest import (
    Receiver,
    authed_url,
    installation_client,
    make_repo,
    push_branch,
    settle,
    token_for,
    user_client,
)

# Real payloads name things a sandbox has no use for: organizations, enterprises, and the
# permissions of the real App that sent them (the sandbox's App asks for fewer).
NOT_MODELLED = {"organization", "enterprise", "permissions"}


def _real(webhooks_dir: Path, event: str, action: str | None) -> dict[str, Any]:
    """The real payload of this event and action; for an action without a sample (issues
    closed), the shared objects of another sample of the same event."""
    exact = webhooks_dir / event / (f"{action}.payload.json" if action else "payload.json")
    if exact.exists():
        data: dict[str, Any] = json.loads(exact.read_text())
        return data
    sample = json.loads(sorted((webhooks_dir / event).glob("*.payload.json"))[0].read_text())
    return {k: v for k, v in sample.items() if k in ("repository", "sender", event[:-1])}


def _missing(real: Any, ours: Any, where: str) -> list[str]:
    """Keys of `real` absent from `ours`, recursively through objects present in both."""
    if not isinstance(real, dict) or not isinstance(ours, dict):
        return []
    gaps = []
    for key, value in real.items():
        if key in NOT_MODELLED:
            continue
        if key not in ours:
            gaps.append(f"{where}.{key}")
        elif key not in ("changes",):
            gaps += _missing(value, ours[key], f"{where}.{key}")
    return gaps


def _story(sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path) -> None:
    """A ticket's life as people and the App would live it, touching every event."""
    make_repo(admin)
    app = installation_client(sandbox)
    writer = user_client(sandbox, "writer")
    issue = writer.rest.issues.create("octo", "demo", title="Do it", body="b").parsed_data
    writer.rest.issues.add_labels("octo", "demo", issue.number, labels=["ballet"])
    writer.rest.issues.update("octo", "demo", issue.number, body="better body")
    comment = writer.rest.issues.create_comment("octo", "demo", issue.number, body="/ballet go")
    writer.rest.issues.update_comment("octo", "demo", comment.parsed_data.id, body="/ballet status")
    writer.rest.issues.remove_label("octo", "demo", issue.number, "ballet")
    sha = push_branch(tmp_path, authed_url(sandbox, token_for(sandbox)), "ballet/1", {"x": "1"})
    pr = app.rest.pulls.create(
        "octo", "demo", title="Do it", head="ballet/1", base="main", draft=True
    ).parsed_data
    app.graphql(
        "mutation { markPullRequestReadyForReview(input: {pullRequestId: "
        f'"{pr.node_id}"}}) {{ pullRequest {{ isDraft }} }} }}'
    )
    app.rest.pulls.request_reviewers("octo", "demo", pr.number, reviewers=["writer"])
    writer.rest.pulls.create_review("octo", "demo", pr.number, event="APPROVE")
    app.rest.repos.create_commit_status("octo", "demo", sha, state="success", context="ballet")
    run = app.rest.checks.create("octo", "demo", name="config", head_sha=sha).parsed_data
    app.rest.checks.update("octo", "demo", run.id, conclusion="success")
    app.rest.pulls.merge("octo", "demo", pr.number, merge_method="merge")
    writer.rest.issues.update("octo", "demo", issue.number, state="closed")
    settle(admin)


EXPECTED = [
    ("installation", "created"),
    ("push", None),
    ("issues", "opened"),
    ("issues", "labeled"),
    ("issues", "edited"),
    ("issue_comment", "created"),
    ("issue_comment", "edited"),
    ("issues", "unlabeled"),
    ("push", None),
    ("pull_request", "opened"),
    ("pull_request", "ready_for_review"),
    ("pull_request", "review_requested"),
    ("pull_request_review", "submitted"),
    ("status", None),
    ("check_run", "created"),
    ("check_run", "completed"),
    ("check_suite", "completed"),
    ("push", None),
    ("pull_request", "closed"),
    ("issues", "closed"),
]


def test_every_change_is_delivered_signed_in_order_and_shaped_like_github(
    sandbox: BackgroundSandbox,
    admin: httpx.Client,
    receiver: Receiver,
    tmp_path: Path,
    webhooks_dir: Path,
) -> None:
    _story(sandbox, admin, tmp_path)
    assert receiver.events() == EXPECTED
    assert all(r.signature_ok for r in receiver.received)
    assert len({r.delivery for r in receiver.received}) == len(receiver.received)
    first = receiver.received[0].headers
    assert first["user-agent"].startswith("GitHub-Hookshot/")
    assert first["x-github-hook-id"]
    gaps = []
    for received in receiver.received:
        payload = received.payload
        assert payload["installation"]["id"] == receiver.received[0].payload["installation"]["id"]
        real = _real(webhooks_dir, received.event, payload.get("action"))
        gaps += _missing(real, payload, f"{received.event}.{payload.get('action')}")
    assert gaps == [], "\n".join(sorted(set(gaps)))

    merged = [r.payload for r in receiver.received if r.event == "pull_request"][-1]
    assert merged["pull_request"]["merged"] is True
    labeled = receiver.received[3].payload
    assert labeled["label"]["name"] == "ballet"
    assert labeled["sender"]["login"] == "writer"
    app_comment_sender = receiver.received[9].payload["sender"]
    assert app_comment_sender == {**app_comment_sender, "login": "ballet[bot]", "type": "Bot"}


def test_delivery_log_and_redelivery_keep_the_guid(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver
) -> None:
    receiver.status = 500
    make_repo(admin)
    writer = user_client(sandbox, "writer")
    writer.rest.issues.create("octo", "demo", title="x")
    settle(admin)
    log = admin.get("/_sandbox/deliveries").json()
    assert [(d["event"], d["action"], d["status_code"]) for d in log] == [
        ("installation", "created", 500),
        ("push", None, 500),
        ("issues", "opened", 500),
    ]
    receiver.status = 202
    again = admin.post(f"/_sandbox/deliveries/{log[2]['id']}/redeliver")
    assert again.status_code == 202
    settle(admin)
    assert [r.delivery for r in receiver.received] == [
        log[0]["guid"],
        log[1]["guid"],
        log[2]["guid"],
        log[2]["guid"],
    ]
    assert receiver.received[3].payload == receiver.received[2].payload
    latest = admin.get("/_sandbox/deliveries").json()[-1]
    assert (latest["redelivery"], latest["status_code"]) == (True, 202)
    one = admin.get(f"/_sandbox/deliveries/{log[2]['id']}").json()
    assert one["payload"]["issue"]["title"] == "x"
    missing = admin.post("/_sandbox/deliveries/999/redeliver")
    assert missing.status_code == 404


def test_a_second_repository_of_an_owner_is_added_to_the_installation(
    admin: httpx.Client, receiver: Receiver, webhooks_dir: Path
) -> None:
    make_repo(admin)
    make_repo(admin, name="second")
    settle(admin)
    added = [r.payload for r in receiver.received if r.event == "installation_repositories"]
    assert [a["repositories_added"][0]["full_name"] for a in added] == ["octo/second"]
    real = _real(webhooks_dir, "installation_repositories", "added")
    assert _missing(real, added[0], "installation_repositories") == []


def test_closing_a_pull_request_unmerged_and_labels_with_colons(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    make_repo(admin)
    push_branch(tmp_path, authed_url(sandbox, "sandbox-user:writer"), "topic", {"t": "t"})
    app = installation_client(sandbox)
    pr = app.rest.pulls.create("octo", "demo", title="t", head="topic", base="main").parsed_data
    app.rest.issues.add_labels("octo", "demo", pr.number, labels=["ballet:question"])
    app.rest.issues.remove_label("octo", "demo", pr.number, "ballet:question")
    app.rest.pulls.update("octo", "demo", pr.number, state="closed")
    settle(admin)
    tail = receiver.events()[-3:]
    assert tail == [
        ("pull_request", "labeled"),
        ("pull_request", "unlabeled"),
        ("pull_request", "closed"),
    ]
    closed = receiver.received[-1].payload["pull_request"]
    assert (closed["merged"], closed["state"]) == (False, "closed")


@pytest.mark.anyio
async def test_deliveries_are_posted_several_at_once_when_asked() -> None:
    """`posting_at_once`: GitHub posts several deliveries at a time; a bench with
    thousands of tickets needs it (one at a time fell minutes behind)."""
    in_flight = most = 0

    async def receive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal in_flight, most
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
                assert length is not None
                await reader.readexactly(int(length[1]))
                in_flight += 1
                most = max(most, in_flight)
                await asyncio.sleep(0.2)
                in_flight -= 1
                writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()

    server = await asyncio.start_server(receive, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    queue = WebhookQueue(f"http://127.0.0.1:{port}/webhooks", "secret", 1, posting_at_once=4)
    posting = asyncio.create_task(queue.run())
    try:
        for i in range(8):
            queue.send("ping", {"zen": str(i)})
        await asyncio.wait_for(queue.idle(), 10)
    finally:
        posting.cancel()
        server.close()
    assert most == 4
    assert [d.status_code for d in queue.log] == [202] * 8
