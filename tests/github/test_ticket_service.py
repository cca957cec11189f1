"""The edge end to end on the fake GitHub: deliveries in, exact API calls out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ballet.core.effects import MarkerKey, PostReportComment
from ballet.core.events import SessionFinished
from ballet.core.record import Record, decode_record
from ballet.core.render import marker_for
from ballet.core.report import Report
from ballet.github.app import GitHubApp
from ballet.github.forge import RateLimited
from ballet.tickets.interpret import Interpreter
from ballet.tickets.live import LIVE_TICKETS
from ballet.tickets.memo import Memo
from ballet.tickets.service import TicketService
from fake_github import INSTALLATION_ID, REPO, FakeGitHub, FakePR
from github_edge_kit import NOW, Delivery, RecordingLauncher, labeled, ticket_service
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio


@pytest.fixture
def launcher() -> RecordingLauncher:
    return RecordingLauncher()


@pytest.fixture
def service(forges: GitHubApp, redis: Redis, launcher: RecordingLauncher) -> TicketService:
    return ticket_service(forges, redis, launcher)


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
        ("GET", f"{R}/issues/1/comments"),  # a record to rebuild? none on the issue,
        ("GET", f"{R}/issues/1/timeline"),  # nor on a PR of the App's naming it
        # First try: no PR or branch from an earlier attempt to look for.
        ("GET", f"{R}/branches/master"),  # its commit and tree in one read
        ("POST", f"{R}/git/commits"),  # the empty seed commit
        ("POST", f"{R}/git/refs"),
        ("POST", f"{R}/pulls"),
        ("POST", f"{R}/issues/1/labels"),
        # The issue gets no comment: its record moves to the PR opened at once, and
        # GitHub links the PR from the issue itself ("Closes #1").
        # The PR is Ballet's own and new: the memo's ledger knows nothing is on it yet.
        # (No check run: the head is the empty seed commit, see core/check_runs.py.)
        ("POST", f"{R}/issues/101/comments"),  # tracking comment on the PR
    ]
    assert repo.not_modified == 0
    pr = repo.prs[(REPO, 101)]
    assert pr.draft and pr.head == BRANCH and pr.base == "master"
    assert "Closes #1" in pr.body
    assert not repo.check_runs
    assert repo.labels[(REPO, 1)] == ["ballet:running"]
    record = tracking_record(repo, 101)
    assert record.pr_number == 101 and record.status == "running" and record.stage == "implement"
    assert record.branch == BRANCH
    assert not repo.comments_on(1)  # the PR's "Closes #1" links it from the issue
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


def comment(
    webhooks_dir: Path, body: str, *, author: str, comment_id: int, on_pr: int | None = None
) -> Delivery:
    payload = json.loads((webhooks_dir / "issue_comment/created.payload.json").read_text())
    payload["installation"] = {"id": INSTALLATION_ID}
    payload["comment"] = {
        **payload["comment"],
        "id": comment_id,
        "body": body,
        "user": {"login": author, "type": "User"},
    }
    if on_pr is not None:
        payload["issue"] = {
            **payload["issue"],
            "number": on_pr,
            "body": "Closes #1",
            "pull_request": {"url": "x"},
        }
    return Delivery(id=f"d-comment-{comment_id}", event="issue_comment", payload=payload)


async def test_command_by_read_only_user_is_refused_with_a_reply(
    service: TicketService, repo: FakeGitHub, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir))
    before = tracking_record(repo, 101)
    await service.on_delivery(comment(webhooks_dir, "/ballet pause", author="reader", comment_id=7))
    replies = [c for c in repo.comments_on(101) if "refused" in c.body]
    assert len(replies) == 1 and "write permission" in replies[0].body
    assert "@reader" in replies[0].body
    assert repo.reactions == []
    assert tracking_record(repo, 101).status == before.status == "running"


async def test_command_taken_gets_eyes_and_changes_the_record(
    service: TicketService, repo: FakeGitHub, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir))
    await service.on_delivery(
        comment(webhooks_dir, "/ballet pause", author="Codertocat", comment_id=8)
    )
    assert repo.reactions == [(8, "eyes")]
    assert tracking_record(repo, 101).status == "paused"
    # The same delivery again (GitHub redelivers) is not a second command.
    await service.on_delivery(
        comment(webhooks_dir, "/ballet pause", author="Codertocat", comment_id=8)
    )
    assert repo.reactions == [(8, "eyes")]


HUMAN_FIRST = """\
pipelines:
  default:
    stages:
      - {id: approval, kind: human, next: {approve: $done, reject: $failed}}
"""


async def test_a_ticket_waiting_on_a_person_is_live_until_it_ends(
    service: TicketService,
    repo: FakeGitHub,
    launcher: RecordingLauncher,
    redis: Redis,
    webhooks_dir: Path,
) -> None:
    # No session is ever launched, yet the reconciler must visit the ticket.
    repo.repos[REPO].files["master"] = {".ballet.yml": HUMAN_FIRST}
    await service.on_delivery(labeled(webhooks_dir))
    assert tracking_record(repo, 101).status == "waiting" and not launcher.launched
    assert await redis.smembers(LIVE_TICKETS) == {f"{REPO}#1".encode()}
    await service.on_delivery(
        comment(webhooks_dir, "/ballet cancel", author="Codertocat", comment_id=9)
    )
    assert tracking_record(repo, 101).status == "cancelled"
    assert await redis.smembers(LIVE_TICKETS) == set()


async def test_rate_limited_start_resumes_without_duplicates(
    service: TicketService, repo: FakeGitHub, launcher: RecordingLauncher, webhooks_dir: Path
) -> None:
    repo.fail_next(
        "POST",
        rf"{R}/issues/101/comments",
        403,
        {"message": "You have exceeded a secondary rate limit."},
        {"retry-after": "30"},
    )
    with pytest.raises(RateLimited) as caught:
        await service.on_delivery(labeled(webhooks_dir))
    assert caught.value.retry_after_seconds == 30
    # arq runs the job again later: the outbox carries on where it stopped.
    await service.on_delivery(labeled(webhooks_dir))
    assert len(repo.prs) == 1
    assert [c.issue for c in repo.comments.values()] == [101]
    assert tracking_record(repo, 101).pr_number == 101
    assert len(launcher.launched) == 1


async def test_retried_comment_effect_edits_instead_of_duplicating(
    forges: GitHubApp, redis: Redis, repo: FakeGitHub, launcher: RecordingLauncher
) -> None:
    interpreter = Interpreter(
        forges.for_installation(INSTALLATION_ID), Memo(redis), launcher, clock=lambda: NOW
    )
    key = MarkerKey(ticket=f"{REPO}#1", kind="report", stage="implement", iteration=1, attempt=1)
    effect = PostReportComment(repo=REPO, number=101, marker=key, body="first")
    await interpreter.apply(effect)
    await redis.flushdb()  # the memo of the comment id is lost too
    await interpreter.apply(effect.model_copy(update={"body": "second"}))
    (only,) = repo.comments_on(101)
    assert only.body.endswith("second") and marker_for(key.render()) in only.body


async def test_record_is_rebuilt_from_the_tracking_comment_when_redis_is_lost(
    service: TicketService, redis: Redis, repo: FakeGitHub, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir))
    await redis.flushdb()
    await service.on_delivery(
        comment(webhooks_dir, "/ballet pause", author="Codertocat", comment_id=9, on_pr=101)
    )
    assert repo.reactions == [(9, "eyes")]
    record = tracking_record(repo, 101)
    assert record.status == "paused" and record.pr_number == 101


async def test_pr_editing_config_gets_a_check_run_with_annotations(
    service: TicketService, repo: FakeGitHub, webhooks_dir: Path
) -> None:
    head = "f" * 40
    repo.prs[(REPO, 2)] = FakePR(
        number=2,
        head="changes",
        base="master",
        head_sha=head,
        title="t",
        body="",
        files=[".ballet.yml", "README.md"],
    )
    repo.repos[REPO].files[head] = {".ballet.yml": "pipelines:\n  default:\n    stages: []\n"}
    payload = json.loads((webhooks_dir / "pull_request/synchronize.payload.json").read_text())
    payload["installation"] = {"id": INSTALLATION_ID}
    payload["pull_request"] = {
        **payload["pull_request"],
        "number": 2,
        "head": {"ref": "changes", "sha": head},
    }
    await service.on_delivery(Delivery(id="d-sync", event="pull_request", payload=payload))
    (run,) = repo.check_runs.values()
    assert run["name"] == "ballet/config" and run["conclusion"] == "failure"
    annotations = run["output"]["annotations"]
    assert annotations and all(a["path"] == ".ballet.yml" for a in annotations)
    assert annotations[0]["start_line"] >= 1

    repo.repos[REPO].files[head] = {".ballet.yml": "trigger_label: go\n"}
    await service.on_delivery(Delivery(id="d-sync-2", event="pull_request", payload=payload))
    (run,) = repo.check_runs.values()  # the same run, updated
    assert run["conclusion"] == "success"


async def test_an_effect_github_refuses_for_good_is_reported_not_retried_forever(
    service: TicketService, repo: FakeGitHub, launcher: RecordingLauncher, webhooks_dir: Path
) -> None:
    repo.repos[REPO].branches = {"trunk": "a" * 40}  # the base branch is gone
    await service.on_delivery(labeled(webhooks_dir))
    notices = [c for c in repo.comments_on(1) if "could not carry out" in c.body]
    assert len(notices) == 1 and "open_branch_and_draft_pr" in notices[0].body
    # The rest of the transition was carried out and nothing is left pending.
    assert repo.labels[(REPO, 1)] == ["ballet:running"]
    assert len(launcher.launched) == 1
    calls = len(repo.calls)
    await service.on_delivery(
        comment(webhooks_dir, "/ballet status", author="Codertocat", comment_id=3)
    )
    assert ("POST", f"{R}/git/refs") not in repo.calls[calls:]


async def test_session_result_posts_its_report_and_starts_the_next_stage(
    service: TicketService, repo: FakeGitHub, launcher: RecordingLauncher, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir))
    (spec,) = [s.spec for s in launcher.launched]
    finished = SessionFinished(
        now=NOW,
        job_key=spec.job_key,
        stage=spec.stage,
        iteration=spec.iteration,
        attempt=spec.attempt,
        report=Report(outcome="done", summary="Fixed the spelling."),
        head_sha="e" * 40,
        duration_seconds=12.0,
    )
    key = f"{REPO}#1"
    assert await service.handle(key, finished, event_id=spec.job_key)
    # The session runner retrying its report changes nothing.
    assert not await service.handle(key, finished, event_id=spec.job_key)
    reports = [c for c in repo.comments_on(101) if "Fixed the spelling." in c.body]
    assert len(reports) == 1
    assert [s.spec.stage for s in launcher.launched] == ["implement", "review"]
    record = tracking_record(repo, 101)
    assert record.stage == "review" and record.history[0].outcome == "done"


async def test_command_on_an_issue_that_is_no_ticket_gets_one_reply(
    service: TicketService, repo: FakeGitHub, webhooks_dir: Path
) -> None:
    delivery = comment(webhooks_dir, "/ballet status", author="Codertocat", comment_id=11)
    await service.on_delivery(delivery)
    await service.on_delivery(delivery)
    (reply,) = repo.comments_on(1)
    assert "not a Ballet ticket" in reply.body and "@Codertocat" in reply.body
    assert repo.reactions == [] and not repo.prs


async def test_a_person_merging_the_pr_finishes_the_ticket(
    service: TicketService, repo: FakeGitHub, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir))
    payload = json.loads((webhooks_dir / "pull_request/closed.payload.json").read_text())
    payload["installation"] = {"id": INSTALLATION_ID}
    payload["number"] = 101
    payload["pull_request"] = {
        **payload["pull_request"],
        "number": 101,
        "merged": True,
        "merged_by": {"login": "Codertocat", "type": "User"},
        "head": {"ref": BRANCH, "sha": repo.prs[(REPO, 101)].head_sha},
    }
    await service.on_delivery(Delivery(id="d-closed", event="pull_request", payload=payload))
    record = tracking_record(repo, 101)
    assert record.status == "done" and record.ended_by == "Codertocat"
    assert repo.labels[(REPO, 1)] == ["ballet:done"]


async def test_events_of_pull_requests_that_are_no_ticket_cost_no_api_call(
    service: TicketService, repo: FakeGitHub, webhooks_dir: Path
) -> None:
    for event, name in [
        ("pull_request", "closed.payload.json"),
        ("pull_request_review", "submitted.payload.json"),
        ("check_suite", "completed.payload.json"),
        ("status", "payload.json"),
    ]:
        payload = json.loads((webhooks_dir / event / name).read_text())
        payload["installation"] = {"id": INSTALLATION_ID}
        await service.on_delivery(Delivery(id=f"d-{event}", event=event, payload=payload))
    assert repo.calls == []


async def test_someone_elses_pr_that_fixes_a_ticket_issue_does_not_drive_the_ticket(
    service: TicketService, repo: FakeGitHub, webhooks_dir: Path
) -> None:
    await service.on_delivery(labeled(webhooks_dir))
    payload = json.loads((webhooks_dir / "pull_request/closed.payload.json").read_text())
    payload["installation"] = {"id": INSTALLATION_ID}
    payload["pull_request"] = {**payload["pull_request"], "merged": True, "body": "Fixes #1"}
    await service.on_delivery(Delivery(id="d-other", event="pull_request", payload=payload))
    assert tracking_record(repo, 101).status == "running"


async def test_a_session_result_after_redis_was_lost_finds_installation_and_record(
    service: TicketService,
    redis: Redis,
    repo: FakeGitHub,
    launcher: RecordingLauncher,
    webhooks_dir: Path,
) -> None:
    await service.on_delivery(labeled(webhooks_dir))
    (spec,) = [s.spec for s in launcher.launched]
    await redis.flushdb()
    finished = SessionFinished(
        now=NOW,
        job_key=spec.job_key,
        stage=spec.stage,
        iteration=spec.iteration,
        attempt=spec.attempt,
        report=Report(outcome="done", summary="Done despite the outage."),
    )
    assert await service.handle(f"{REPO}#1", finished, event_id=spec.job_key)
    assert ("GET", f"{R}/installation") in repo.calls
    assert tracking_record(repo, 101).stage == "review"
