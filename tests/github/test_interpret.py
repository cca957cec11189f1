"""The effect interpreter on the fake GitHub: each effect's calls, and its follow-up event."""

from __future__ import annotations

import pytest
from ballet.core.config import Runtime
from ballet.core.effects import (
    CancelSession,
    MarkerKey,
    MarkReadyForReview,
    MergePR,
    OpenBranchAndDraftPR,
    ReadChecks,
    RemoveLabels,
    RequestReviewers,
    SessionSpec,
    SetCheckRun,
    SetLabels,
    StartSession,
    UpsertTrackingComment,
    WithdrawMerge,
)
from ballet.core.events import ChecksCompleted, ChecksStarted, MergeResult, PullRequestOpened
from ballet.core.render import REPORT_LINK_SCHEME
from ballet.github.app import GitHubApp
from ballet.tickets.interpret import Interpreter
from ballet.tickets.memo import Memo
from fake_github import APP_ID, INSTALLATION_ID, REPO, FakeGitHub, FakePR
from github_edge_kit import NOW, RecordingLauncher
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio
R = f"/repos/{REPO}"


@pytest.fixture
def launcher() -> RecordingLauncher:
    return RecordingLauncher()


@pytest.fixture
def interpreter(forges: GitHubApp, redis: Redis, launcher: RecordingLauncher) -> Interpreter:
    return Interpreter(
        forges.for_installation(INSTALLATION_ID),
        Memo(redis),
        launcher,
        clock=lambda: NOW,
        own_app_id=APP_ID,  # as the service builds it
    )


def open_pr_effect() -> OpenBranchAndDraftPR:
    return OpenBranchAndDraftPR(
        repo=REPO, issue=1, branch="ballet/1-x", base="main", title="Fix it", body="Closes #1"
    )


async def test_open_pr_twice_opens_one_pr_and_reports_it_both_times(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    first = await interpreter.apply(open_pr_effect())
    second = await interpreter.apply(open_pr_effect())
    assert isinstance(first, PullRequestOpened) and first == second
    assert len(fake_github.prs) == 1
    pr = fake_github.prs[(REPO, first.number)]
    # The branch starts with an empty commit of its own on top of main.
    assert pr.head_sha != fake_github.repos[REPO].branches["main"]
    assert fake_github.writes().count(("POST", f"{R}/pulls")) == 1


async def test_merge_outcomes(interpreter: Interpreter, fake_github: FakeGitHub) -> None:
    opened = await interpreter.apply(open_pr_effect())
    assert isinstance(opened, PullRequestOpened)
    pr = fake_github.prs[(REPO, opened.number)]
    merge = MergePR(repo=REPO, number=opened.number)

    pr.mergeable = False
    result = await interpreter.apply(merge)
    assert isinstance(result, MergeResult) and result.result == "conflict"

    pr.mergeable = True
    assert pr.draft
    result = await interpreter.apply(merge)
    assert isinstance(result, MergeResult)
    assert (result.result, result.sha) == ("merged", "m" * 40)
    assert pr.merged and not pr.draft

    other = FakePR(2, "b", "main", "c" * 40, "t", "", state="closed")
    fake_github.prs[(REPO, 2)] = other
    result = await interpreter.apply(MergePR(repo=REPO, number=2))
    assert isinstance(result, MergeResult) and result.result == "closed"


async def test_merge_refused_by_github_returns_the_work_with_githubs_reason(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    fake_github.prs[(REPO, 3)] = FakePR(3, "b", "main", "c" * 40, "t", "")
    fake_github.fail_next(
        "PUT", rf"{R}/pulls/3/merge", 405, {"message": "Required status check is expected."}
    )
    result = await interpreter.apply(MergePR(repo=REPO, number=3))
    assert isinstance(result, MergeResult) and result.result == "checks_failed"
    assert "Required status check" in result.detail


async def test_check_run_is_created_once_then_updated(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    sha = "d" * 40
    await interpreter.apply(
        SetCheckRun(repo=REPO, name="ballet/review", head_sha=sha, status="in_progress")
    )
    await interpreter.apply(
        SetCheckRun(
            repo=REPO,
            name="ballet/review",
            head_sha=sha,
            status="completed",
            conclusion="success",
            summary="approved",
        )
    )
    (run,) = fake_github.check_runs.values()
    assert run["status"] == "completed" and run["conclusion"] == "success"
    assert run["output"]["summary"] == "approved"


async def test_each_name_and_head_has_its_own_check_run(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    old, new = "d" * 40, "e" * 40

    def check(name: str, sha: str, conclusion: str | None = None) -> SetCheckRun:
        status = "completed" if conclusion else "in_progress"
        return SetCheckRun(repo=REPO, name=name, head_sha=sha, status=status, conclusion=conclusion)

    await interpreter.apply(check("ballet/implement", old))
    await interpreter.apply(check("ballet/implement", old, "neutral"))
    await interpreter.apply(check("ballet/implement", new, "success"))
    await interpreter.apply(check("ballet/review", new))
    await interpreter.apply(check("ballet/signoff-security", new))
    await interpreter.apply(check("ballet/review", new, "failure"))
    runs = {(r["name"], r["head_sha"]): r for r in fake_github.check_runs.values()}
    assert {key: (r["status"], r.get("conclusion")) for key, r in runs.items()} == {
        ("ballet/implement", old): ("completed", "neutral"),
        ("ballet/implement", new): ("completed", "success"),
        ("ballet/review", new): ("completed", "failure"),
        ("ballet/signoff-security", new): ("in_progress", None),
    }


async def test_labels_review_and_sessions(
    interpreter: Interpreter, fake_github: FakeGitHub, launcher: RecordingLauncher
) -> None:
    opened = await interpreter.apply(open_pr_effect())
    assert isinstance(opened, PullRequestOpened)
    n = opened.number
    await interpreter.apply(SetLabels(repo=REPO, number=1, labels=("ballet:waiting",)))
    await interpreter.apply(
        RemoveLabels(repo=REPO, number=1, labels=("ballet:waiting", "ballet:running"))
    )
    assert fake_github.labels[(REPO, 1)] == []
    await interpreter.apply(MarkReadyForReview(repo=REPO, number=n))
    assert not fake_github.prs[(REPO, n)].draft
    await interpreter.apply(RequestReviewers(repo=REPO, number=n, reviewers=("octocat",)))
    assert fake_github.reviewers[(REPO, n)] == ["octocat"]

    spec = SessionSpec(
        job_key=f"{REPO}#1:implement:1:1",
        repo=REPO,
        issue=1,
        title="Fix it",
        author="Codertocat",
        stage="implement",
        iteration=1,
        attempt=1,
        runtime="script",
        runtime_config=Runtime(adapter="command", command=("true",)),
        timeout_minutes=5,
        branch="ballet/1-x",
        base="main",
        pipeline="default",
        pipeline_version=1,
    )
    await interpreter.apply(StartSession(repo=REPO, spec=spec))
    await interpreter.apply(CancelSession(repo=REPO, job_key=spec.job_key))
    assert [s.spec for s in launcher.launched] == [spec]
    assert [c.job_key for c in launcher.cancelled] == [spec.job_key]


async def test_reading_checks_waits_for_every_check_but_ballets_own(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    sha = "9" * 40
    runs = fake_github.check_runs

    def run(run_id: int, name: str, status: str, conclusion: str | None, app: int) -> None:
        runs[run_id] = {
            "id": run_id,
            "name": name,
            "head_sha": sha,
            "status": status,
            "conclusion": conclusion,
            "app": {"id": app},
        }

    read = ReadChecks(repo=REPO, sha=sha)
    run(1, "Ballet", "in_progress", None, APP_ID)  # Ballet's own stage run
    assert await interpreter.apply(read) is None  # no CI yet: nothing to tell
    run(2, "ci/lint", "completed", "success", 999)
    run(3, "ci/test", "in_progress", None, 999)
    assert await interpreter.apply(read) == ChecksStarted(now=NOW, head_sha=sha)

    run(3, "ci/test", "completed", "failure", 999)
    verdict = await interpreter.apply(read)
    assert isinstance(verdict, ChecksCompleted) and not verdict.partial
    assert (verdict.head_sha, verdict.conclusion, verdict.names) == (sha, "failure", ("ci/test",))

    run(3, "ci/test", "completed", "success", 999)
    verdict = await interpreter.apply(read)
    assert isinstance(verdict, ChecksCompleted)
    assert (verdict.conclusion, verdict.names) == ("success", ("ci/lint", "ci/test"))


async def test_a_comment_deleted_by_a_person_is_posted_again(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    first = await interpreter.upsert_comment(REPO, 4, f"{REPO}#4:notice::0:0", "hello")
    del fake_github.comments[first.id]
    second = await interpreter.upsert_comment(REPO, 4, f"{REPO}#4:notice::0:0", "hello again")
    assert second.id != first.id
    (only,) = fake_github.comments_on(4)
    assert only.body.endswith("hello again")


async def test_merge_waits_for_checks_and_refuses_red_ones(
    forges: GitHubApp, redis: Redis, fake_github: FakeGitHub, launcher: RecordingLauncher
) -> None:
    interpreter = Interpreter(
        forges.for_installation(INSTALLATION_ID),
        Memo(redis),
        launcher,
        clock=lambda: NOW,
        own_app_id=APP_ID,
    )
    sha = "8" * 40
    fake_github.prs[(REPO, 5)] = FakePR(5, "b", "main", sha, "t", "")
    runs = fake_github.check_runs
    runs[1] = {
        "id": 1,
        "name": "Ballet",
        "head_sha": sha,
        "status": "in_progress",
        "conclusion": None,
        "app": {"id": APP_ID},
    }
    runs[2] = {
        "id": 2,
        "name": "ci",
        "head_sha": sha,
        "status": "in_progress",
        "conclusion": None,
        "app": {"id": 999},
    }
    merge = MergePR(repo=REPO, number=5, sha=sha)

    assert await interpreter.apply(merge) is None  # CI still runs: the merge waits
    assert not fake_github.prs[(REPO, 5)].merged
    assert await interpreter.resume_merge(REPO, 5) is None

    runs[2].update(status="completed", conclusion="failure")
    result = await interpreter.resume_merge(REPO, 5)
    assert isinstance(result, MergeResult) and result.result == "checks_failed"
    assert "ci" in result.detail and not fake_github.prs[(REPO, 5)].merged
    assert await interpreter.resume_merge(REPO, 5) is None  # nothing waits any more

    runs[2].update(conclusion="success")
    result = await interpreter.apply(merge)
    assert isinstance(result, MergeResult) and result.result == "merged"
    assert fake_github.prs[(REPO, 5)].merged


async def test_a_branch_behind_its_base_is_brought_up_to_date_before_merging(
    forges: GitHubApp, redis: Redis, fake_github: FakeGitHub, launcher: RecordingLauncher
) -> None:
    interpreter = Interpreter(
        forges.for_installation(INSTALLATION_ID),
        Memo(redis),
        launcher,
        clock=lambda: NOW,
        own_app_id=APP_ID,
    )
    old = "7" * 40
    pr = FakePR(6, "b", "main", old, "t", "", behind=True)
    fake_github.prs[(REPO, 6)] = pr
    updated = await interpreter.apply(MergePR(repo=REPO, number=6, sha=old))
    assert pr.head_sha != old and not pr.behind and not pr.merged
    # The merge waits pinned to the commit GitHub made, and says which.
    assert isinstance(updated, MergeResult) and (updated.result, updated.sha) == (
        "updated",
        pr.head_sha,
    )
    assert ("PUT", f"{R}/pulls/6/update-branch") in fake_github.writes()
    # CI on the new head finishes: the parked merge goes ahead, for the new head.
    result = await interpreter.resume_merge(REPO, 6)
    assert isinstance(result, MergeResult) and result.result == "merged"


async def test_a_push_after_the_update_withdraws_the_waiting_merge(
    forges: GitHubApp, redis: Redis, fake_github: FakeGitHub, launcher: RecordingLauncher
) -> None:
    interpreter = Interpreter(
        forges.for_installation(INSTALLATION_ID), Memo(redis), launcher, clock=lambda: NOW
    )
    old = "7" * 40
    pr = FakePR(6, "b", "main", old, "t", "", behind=True)
    fake_github.prs[(REPO, 6)] = pr
    await interpreter.apply(MergePR(repo=REPO, number=6, sha=old))
    pr.head_sha = "w" * 40  # a writer pushed while the updated head's checks ran
    await interpreter.apply(WithdrawMerge(repo=REPO, number=6))
    assert await interpreter.resume_merge(REPO, 6) is None
    assert not pr.merged


async def test_a_head_moved_since_the_approval_is_not_brought_up_to_date(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    pr = FakePR(6, "b", "main", "w" * 40, "t", "", behind=True)
    fake_github.prs[(REPO, 6)] = pr
    assert await interpreter.apply(MergePR(repo=REPO, number=6, sha="7" * 40)) is None
    assert ("PUT", f"{R}/pulls/6/update-branch") not in fake_github.writes()
    assert await interpreter.resume_merge(REPO, 6) is None  # nothing waits: asked again


async def test_a_branch_that_cannot_be_brought_up_to_date_is_a_conflict(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    fake_github.prs[(REPO, 7)] = FakePR(7, "b", "main", "7" * 40, "t", "", behind=True)
    fake_github.prs[(REPO, 7)].mergeable = None  # GitHub still computing
    fake_github.fail_next(
        "PUT",
        rf"{R}/pulls/7/update-branch",
        422,
        {"message": "merge conflict between base and head"},
    )
    result = await interpreter.apply(MergePR(repo=REPO, number=7))
    assert isinstance(result, MergeResult) and result.result == "conflict"


async def test_tracking_comment_links_the_reports_this_edge_wrote(
    interpreter: Interpreter, fake_github: FakeGitHub
) -> None:
    written = f"{REPO}#1:report:implement:1:1"
    report = await interpreter.upsert_comment(REPO, 4, written, "the report")
    body = (
        f"| implement | [report]({REPORT_LINK_SCHEME}{written}) |\n"
        f"| review | [report]({REPORT_LINK_SCHEME}{REPO}#1:report:review:1:1) |"
    )
    key = MarkerKey(ticket=f"{REPO}#1", kind="tracking")
    await interpreter.apply(
        UpsertTrackingComment(repo=REPO, number=4, target="pr", marker=key, body=body)
    )
    (tracking,) = [c for c in fake_github.comments_on(4) if c.id != report.id]
    assert f"| implement | [report](#issuecomment-{report.id}) |" in tracking.body
    assert "| review | report |" in tracking.body  # not written: no dead link
