"""The edge end to end on the fake GitHub: deliveries in, exact API calls out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ballet.core.config import Runtime
from ballet.core.effects import CancelSession, StartSession
from ballet.core.record import Record, decode_record
from ballet.github.github_forge import GitHubForges
from ballet.github.memo import Memo
from ballet.github.store import RecordStore
from ballet.github.ticket_service import TicketService
from ballet.github.translate import AppIdentity
from edge_fake_github import INSTALLATION_ID, REPO, FakeGitHub
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
APP = AppIdentity(app_id=4242, slug="ballet-test")


@dataclass
class RecordingLauncher:
    launched: list[StartSession] = field(default_factory=list)
    cancelled: list[CancelSession] = field(default_factory=list)

    async def launch(self, effect: StartSession) -> None:
        self.launched.append(effect)

    async def cancel(self, effect: CancelSession) -> None:
        self.cancelled.append(effect)


@dataclass(frozen=True)
class Delivery:
    id: str
    event: str
    payload: dict[str, Any]
    received_at: datetime = NOW


@pytest.fixture
def launcher() -> RecordingLauncher:
    return RecordingLauncher()


@pytest.fixture
def service(forges: GitHubForges, redis: Redis, launcher: RecordingLauncher) -> TicketService:
    return TicketService(
        forges.for_installation,
        RecordStore(redis),
        Memo(redis),
        launcher,
        app=APP,
        default_runtime=Runtime(adapter="command", command=("python3", "agent.py")),
        clock=lambda: NOW,
    )


def labeled(webhooks_dir: Path, label: str = "ballet", sender: str = "Codertocat") -> Delivery:
    payload = json.loads((webhooks_dir / "issues/labeled.payload.json").read_text())
    payload["label"] = {"name": label}
    payload["installation"] = {"id": INSTALLATION_ID}
    payload["sender"] = {**payload["sender"], "login": sender}
    return Delivery(id="d-label", event="issues", payload=payload)


@pytest.fixture
def repo(fake_github: FakeGitHub) -> FakeGitHub:
    r = fake_github.repos[REPO]
    r.default_branch = "master"
    r.branches = {"master": "a" * 40}
    return fake_github


R = f"/repos/{REPO}"
BRANCH = "ballet/1-spelling-error-in-the-readme-file"


def tracking_record(fake: FakeGitHub, number: int) -> Record:
    (comment,) = [c for c in fake.comments_on(number) if "ballet:state" in c.body]
    return decode_record(comment.body)


async def test_labelled_issue_opens_branch_and_draft_pr_with_exact_api_calls(
    service: TicketService, repo: FakeGitHub, launcher: RecordingLauncher, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir))

    # The whole rate-limit budget of a ticket start, in order.
    assert repo.calls == [
        ("POST", "/app/installations/77/access_tokens"),
        ("GET", f"{R}/contents/.ballet.yml"),
        ("GET", f"{R}/collaborators/Codertocat/permission"),
        ("GET", f"{R}/issues/1/comments"),  # a record to rebuild? none
        ("GET", f"{R}/pulls"),  # a PR from an earlier attempt? none
        ("GET", f"{R}/git/ref/heads/{BRANCH}"),
        ("GET", f"{R}/git/ref/heads/master"),
        ("GET", f"{R}/git/commits/{'a' * 40}"),
        ("POST", f"{R}/git/commits"),  # the empty seed commit
        ("POST", f"{R}/git/refs"),
        ("POST", f"{R}/pulls"),
        ("POST", f"{R}/issues/1/labels"),
        ("GET", f"{R}/issues/1/comments"),  # conditional: a 304
        ("POST", f"{R}/issues/1/comments"),  # tracking comment on the issue
        ("PATCH", f"{R}/issues/comments/1002"),  # ...becomes a pointer to the PR
        ("GET", f"{R}/issues/101/comments"),
        ("POST", f"{R}/issues/101/comments"),  # tracking comment on the PR
    ]
    assert repo.not_modified == 1
    pr = repo.prs[(REPO, 101)]
    assert pr.draft and pr.head == BRANCH and pr.base == "master"
    assert "Closes #1" in pr.body
    assert repo.labels[(REPO, 1)] == ["ballet:running"]
    record = tracking_record(repo, 101)
    assert record.pr_number == 101 and record.status == "running" and record.stage == "implement"
    assert record.branch == BRANCH
    (issue_comment,) = repo.comments_on(1)
    assert "#101" in issue_comment.body and "ballet:state" not in issue_comment.body
    (session,) = launcher.launched
    assert session.spec.stage == "implement" and session.spec.branch == BRANCH


async def test_redelivered_label_changes_nothing(
    service: TicketService, repo: FakeGitHub, launcher: RecordingLauncher, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir))
    writes = repo.writes()
    await service.on_delivery(labeled(webhooks_dir))
    assert repo.writes() == writes
    assert len(launcher.launched) == 1


async def test_other_labels_and_read_only_labellers_start_nothing(
    service: TicketService, repo: FakeGitHub, launcher: RecordingLauncher, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir, label="bug"))
    assert repo.writes() == [] and repo.comments_on(1) == []
    await service.on_delivery(labeled(webhooks_dir, sender="reader"))
    (notice,) = repo.comments_on(1)
    assert "@reader" in notice.body and "write permission" in notice.body
    assert (REPO, 101) not in repo.prs and not launcher.launched


async def test_invalid_config_comments_the_errors_and_opens_no_branch(
    service: TicketService, repo: FakeGitHub, launcher: RecordingLauncher, webhooks_dir: Path
) -> None:
    repo.repos[REPO].files["master"] = {
        ".ballet.yml": "trigger_label: ballet\npipelines:\n  default:\n    iteration_limit: 99\n"
    }
    await service.on_delivery(labeled(webhooks_dir))
    (comment,) = repo.comments_on(1)
    assert "did not start" in comment.body
    assert ".ballet.yml:4:" in comment.body  # line:column of the bad value
    assert repo.repos[REPO].branches == {"master": "a" * 40}
    assert not repo.prs and not launcher.launched
    # A second attempt edits the same notice instead of adding another.
    await service.on_delivery(labeled(webhooks_dir))
    assert len(repo.comments_on(1)) == 1


async def test_custom_trigger_label_from_config(
    service: TicketService, repo: FakeGitHub, launcher: RecordingLauncher, webhooks_dir: Path
) -> None:
    repo.repos[REPO].files["master"] = {".ballet.yml": "trigger_label: robot\n"}
    await service.on_delivery(labeled(webhooks_dir, label="ballet"))
    assert not launcher.launched
