"""The merge queue's webhooks read for the ticket of the pull request they are about."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ballet.core.events import MergeGroupRequested, MergeQueueLeft
from ballet.github.forge import AppIdentity
from ballet.github.intents import ForTicket, Ignored, TicketTarget
from ballet.github.merge_queue import pull_of_queue_ref
from ballet.github.translate import HANDLED_EVENTS, translate

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
APP = AppIdentity(app_id=4242, slug="ballet-test")
HEAD = "a" * 40
GROUP = "b" * 40


def _group(action: str, head_ref: str) -> dict[str, Any]:
    return {
        "action": action,
        "installation": {"id": 77},
        "repository": {"full_name": "octo/app"},
        "sender": {"login": "github-merge-queue[bot]", "type": "Bot"},
        "merge_group": {
            "head_sha": GROUP,
            "head_ref": head_ref,
            "base_sha": "c" * 40,
            "base_ref": "refs/heads/main",
        },
    }


def test_a_groups_checks_requested_is_for_the_ticket_of_its_pull_request() -> None:
    assert "merge_group" in HANDLED_EVENTS
    ref = f"refs/heads/gh-readonly-queue/main/pr-12-{HEAD}"
    (intent,) = translate("merge_group", _group("checks_requested", ref), app=APP, now=NOW)
    assert intent == ForTicket(
        77,
        TicketTarget(repo="octo/app", pr=12),
        MergeGroupRequested(now=NOW, group_sha=GROUP, head_sha=HEAD),
    )
    elsewhere = _group("checks_requested", "refs/heads/x")
    (other,) = translate("merge_group", elsewhere, app=APP, now=NOW)
    assert isinstance(other, Ignored)
    (destroyed,) = translate("merge_group", _group("destroyed", ref), app=APP, now=NOW)
    assert isinstance(destroyed, Ignored)  # the pull request's own events tell its fate


def test_a_dequeued_pull_request_carries_githubs_reason(webhooks_dir: Path) -> None:
    payload = json.loads((webhooks_dir / "pull_request/synchronize.payload.json").read_text())
    payload.update(installation={"id": 77}, action="dequeued", reason="CI_FAILURE")
    (intent,) = translate("pull_request", payload, app=APP, now=NOW)
    assert isinstance(intent, ForTicket) and intent.target.pr == payload["number"]
    assert intent.event == MergeQueueLeft(
        now=NOW, reason="CI_FAILURE", by=payload["sender"]["login"]
    )


def test_queue_refs_name_their_pull_request_and_head() -> None:
    assert pull_of_queue_ref(f"gh-readonly-queue/release/1.x/pr-3-{HEAD}") == (3, HEAD)
    assert pull_of_queue_ref(f"refs/heads/gh-readonly-queue/main/pr-3-{HEAD}") == (3, HEAD)
    assert pull_of_queue_ref("refs/heads/main") is None
    assert pull_of_queue_ref("gh-readonly-queue/main/pr-x-1") is None
