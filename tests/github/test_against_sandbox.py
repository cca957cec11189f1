"""The production adapter and ticket service against the real sandbox, over loopback HTTP.

No fake at all: the sandbox verifies the App's JWT, mints expiring tokens and
keeps repositories in real git, so this is the adapter as it meets GitHub's
shapes (and the proof the lenient response models read the sandbox's JSON).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from ballet.core.config import Runtime
from ballet.core.record import decode_record
from ballet.core.render import marker_for
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.github.forge import (
    Annotation,
    CheckAnnotation,
    CheckRunSpec,
    FailedCheck,
    NotFound,
    ReviewComment,
)
from ballet.github.reviews import ReviewCommentData
from ballet.sandbox.server import BackgroundSandbox
from ballet.settings import Settings
from ballet.tickets.live import LiveTickets
from ballet.tickets.memo import Memo
from ballet.tickets.service import TicketService
from ballet.tickets.source import GitHubTicketSource, IssueDetails
from ballet.tickets.store import RecordStore, tracking_marker
from ballet.wiring import EdgeConfigError, build_edge
from fake_github import API, FakeGitHub
from git_repos import git
from github_edge_kit import Delivery, RecordingLauncher
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

REPO = "octo/demo"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[BackgroundSandbox]:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        yield running


@pytest.fixture
def installation_id(sandbox: BackgroundSandbox) -> int:
    with httpx.Client(base_url=sandbox.api_url, timeout=30) as admin:
        response = admin.post(
            "/_sandbox/repos",
            json={
                "owner": "octo",
                "name": "demo",
                "collaborators": {"writer": "write", "reader": "read"},
                "files": {"README.md": "# demo\n"},
            },
        )
        assert response.status_code == 201, response.text
        return int(response.json()["installation_id"])


@pytest.fixture
async def sandbox_forges(sandbox: BackgroundSandbox, redis: Redis) -> AsyncIterator[GitHubApp]:
    app = sandbox.sandbox.app
    forges = GitHubApp(
        GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), sandbox.api_url),
        redis,
        write_spacing_seconds=0.0,
    )
    yield forges
    await forges.aclose()


async def test_adapter_speaks_the_sandbox(
    sandbox_forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox
) -> None:
    forge = sandbox_forges.for_installation(installation_id)
    assert await forge.default_branch(REPO) == "main"
    assert await forge.file_text(REPO, "README.md", "main") == "# demo\n"
    assert await forge.file_text(REPO, ".ballet.yml", "main") is None
    assert await forge.permission(REPO, "writer") == "write"
    assert await forge.permission(REPO, "nobody") in ("none", "read")
    remote = await forge.git_remote(REPO)
    assert remote.url == f"{sandbox.api_url}/{REPO}.git"
    identity = await sandbox_forges.app_identity()
    assert identity.app_id == sandbox.sandbox.app.app_id
    assert await sandbox_forges.installation_of(REPO) == installation_id
    assert await sandbox_forges.installation_of("octo/absent") is None


async def test_labelled_issue_starts_a_ticket_on_the_sandbox(
    sandbox_forges: GitHubApp,
    installation_id: int,
    sandbox: BackgroundSandbox,
    redis: Redis,
    webhooks_dir: Path,
) -> None:
    launcher = RecordingLauncher()
    identity = await sandbox_forges.app_identity()
    service = TicketService(
        sandbox_forges.for_installation,
        RecordStore(redis),
        Memo(redis),
        launcher,
        app=identity,
        default_runtime=Runtime(adapter="command", command=("python3", "agent.py")),
        clock=lambda: datetime.now(UTC),
        live_tickets=LiveTickets(redis),
    )
    forge = sandbox_forges.for_installation(installation_id)
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:writer"}
    ) as user:
        created = await user.post(
            f"/repos/{REPO}/issues", json={"title": "Spelling error in the README file"}
        )
        assert created.status_code == 201, created.text
        assert created.json()["number"] == 1
    payload: dict[str, Any] = json.loads((webhooks_dir / "issues/labeled.payload.json").read_text())
    payload["label"] = {"name": "ballet"}
    payload["installation"] = {"id": installation_id}
    payload["sender"] = {"login": "writer", "type": "User"}
    payload["repository"] = {**payload["repository"], "full_name": REPO, "default_branch": "main"}
    await service.on_delivery(Delivery(id="sb-1", event="issues", payload=payload))

    pr = await forge.find_pr_by_head(REPO, "ballet/1-spelling-error-in-the-readme-file")
    assert pr is not None and pr.draft and "Closes #1" in pr.body
    comments = await forge.list_comments(REPO, pr.number)
    (tracking,) = [c for c in comments if tracking_marker(f"{REPO}#1") in c.body]
    record = decode_record(tracking.body)
    assert record.pr_number == pr.number and record.status == "running"
    assert marker_for(f"{REPO}#1:tracking::0:0") == tracking_marker(f"{REPO}#1")
    assert len(launcher.launched) == 1


async def test_build_edge_from_settings(sandbox: BackgroundSandbox, redis: Redis) -> None:
    app = sandbox.sandbox.app
    settings = Settings(
        app_id=app.app_id,
        private_key=app.private_key_pem.decode(),
        github_api_url=sandbox.api_url,
    )
    edge = await build_edge(settings, redis, RecordingLauncher())
    try:
        assert isinstance(edge.service, TicketService)
    finally:
        await edge.aclose()
    with pytest.raises(EdgeConfigError, match="BALLET_APP_ID"):
        await build_edge(Settings(github_api_url=sandbox.api_url), redis, RecordingLauncher())


ISSUE_BODY = "Please greet.\n\n- [ ] says hello\n"


async def read_issue(forges: GitHubApp, store: RecordStore, api_url: str) -> IssueDetails:
    details = await GitHubTicketSource(store, forges.for_installation).issue(REPO, 1)
    # The host differs (loopback against github.com); the rest of the URL must not.
    return replace(details, url=urlsplit(details.url).path)


async def test_the_shared_fake_serves_an_issue_as_the_sandbox_does(
    sandbox_forges: GitHubApp,
    installation_id: int,
    sandbox: BackgroundSandbox,
    redis: Redis,
) -> None:
    store = RecordStore(redis)
    await store.remember_installation(REPO, installation_id)
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:writer"}
    ) as user:
        created = await user.post(
            f"/repos/{REPO}/issues",
            json={"title": "Greet", "body": ISSUE_BODY, "labels": ["ballet", "ballet:running"]},
        )
        assert created.status_code == 201, created.text
    from_sandbox = await read_issue(sandbox_forges, store, sandbox.api_url)
    # The fake is another GitHub: none of the sandbox's cached tokens may reach it.
    await redis.flushdb()
    await store.remember_installation(REPO, installation_id)

    fake = FakeGitHub()
    fake.add_repo(REPO)
    fake.add_issue(REPO, 1, title="Greet", body=ISSUE_BODY, labels=("ballet", "ballet:running"))
    app = sandbox.sandbox.app
    fake_forges = GitHubApp(
        GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), API), redis
    )
    try:
        with fake.serving():
            from_fake = await read_issue(fake_forges, store, API)
    finally:
        await fake_forges.aclose()

    assert from_fake == from_sandbox
    assert from_sandbox.labels == ("ballet", "ballet:running")
    assert from_sandbox.url == f"/{REPO}/issues/1"


async def test_live_tickets_are_found_by_label_on_the_sandbox_and_the_fake_alike(
    sandbox_forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    """What the reconciler asks after Redis lost its live set, on both GitHubs."""
    labelled = [("ballet", "ballet:running"), ("ballet", "ballet:waiting"), ("bug",)]
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:writer"}
    ) as user:
        for n, labels in enumerate(labelled, 1):
            created = await user.post(
                f"/repos/{REPO}/issues", json={"title": f"issue {n}", "labels": list(labels)}
            )
            assert created.status_code == 201, created.text
    store = RecordStore(redis)
    source = GitHubTicketSource(
        store, sandbox_forges.for_installation, installations=sandbox_forges.installations
    )
    from_sandbox = await source.live_on_github()
    assert await store.installation_of(REPO) == installation_id

    await redis.flushdb()
    fake = FakeGitHub()
    fake.add_repo(REPO)
    for n, labels in enumerate(labelled, 1):
        fake.add_issue(REPO, n, title=f"issue {n}", labels=labels)
    app = sandbox.sandbox.app
    fake_forges = GitHubApp(
        GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), API), redis
    )
    try:
        with fake.serving():
            from_fake = await GitHubTicketSource(
                RecordStore(redis),
                fake_forges.for_installation,
                installations=fake_forges.installations,
            ).live_on_github()
    finally:
        await fake_forges.aclose()
    assert from_sandbox == from_fake == [f"{REPO}#1", f"{REPO}#2"]


def _push_branch(url: str, token: str, root: Path, branch: str, files: dict[str, str]) -> str:
    """Commit `files` on a new `branch` from main and push it with `token`; the new sha."""
    authed = url.replace("://", f"://x-access-token:{token}@", 1)
    work = root / f"work-{branch}"
    git("clone", "-q", authed, str(work))
    git("checkout", "-q", "-b", branch, cwd=work)
    for name, text in files.items():
        (work / name).write_text(text)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", f"change {', '.join(files)}", cwd=work)
    git("push", "-q", "origin", branch, cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


async def test_a_review_with_inline_comments_is_read_and_answered(
    sandbox_forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    forge = sandbox_forges.for_installation(installation_id)
    remote = await forge.git_remote(REPO)
    text = "".join(f"line {n}\n" for n in range(1, 6))
    head = _push_branch(remote.url, remote.token, tmp_path, "topic", {"app.txt": text})
    pr = await forge.open_draft_pr(REPO, head="topic", base="main", title="t", body="b")
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:writer"}
    ) as writer:
        made = await writer.post(
            f"/repos/{REPO}/pulls/{pr.number}/reviews",
            json={
                "event": "REQUEST_CHANGES",
                "body": "Two things.",
                "comments": [
                    {"path": "app.txt", "line": 3, "body": "Name it."},
                    {"path": "app.txt", "start_line": 4, "line": 5, "body": "Drop these."},
                ],
            },
        )
        assert made.status_code == 200, made.text
    review_id = made.json()["id"]

    detail = await forge.review(REPO, pr.number, review_id)
    assert (detail.id, detail.author, detail.state, detail.body, detail.commit_id) == (
        review_id,
        "writer",
        "CHANGES_REQUESTED",
        "Two things.",
        head,
    )
    assert detail.html_url.endswith(f"/pull/{pr.number}#pullrequestreview-{review_id}")
    name_it, drop = detail.comments
    assert name_it == ReviewComment(
        id=name_it.id,
        path="app.txt",
        line=3,
        start_line=None,
        side="RIGHT",
        diff_hunk="@@ -0,0 +1,5 @@\n+line 1\n+line 2\n+line 3",
        body="Name it.",
        author="writer",
    )
    assert (drop.start_line, drop.line, drop.in_reply_to, detail.comments_left_out) == (
        4,
        5,
        None,
        0,
    )
    bounded = await forge.review(REPO, pr.number, review_id, max_comments=1)
    assert (bounded.comments, bounded.comments_left_out) == ((name_it,), 1)

    await forge.reply_to_review_comment(REPO, pr.number, name_it.id, "Named in the next push.")
    async with httpx.AsyncClient(base_url=sandbox.api_url) as anyone:
        thread = (await anyone.get(f"/repos/{REPO}/pulls/{pr.number}/comments")).json()
    reply = thread[-1]
    assert (reply["in_reply_to_id"], reply["user"]["login"], reply["body"]) == (
        name_it.id,
        "ballet[bot]",
        "Named in the next push.",
    )
    answered = await forge.review(REPO, pr.number, reply["pull_request_review_id"])
    assert [(c.in_reply_to, c.author) for c in answered.comments] == [(name_it.id, "ballet[bot]")]
    with pytest.raises(NotFound):
        await forge.reply_to_review_comment(REPO, pr.number, 424242, "to no one")
    with pytest.raises(NotFound):
        await forge.review(REPO, pr.number, 424242)


def test_an_outdated_comment_is_read_at_its_original_line() -> None:
    """GitHub sends `line: null` for a comment whose line the branch has since changed."""
    outdated = ReviewCommentData.model_validate(
        {
            "id": 7,
            "path": "a.py",
            "line": None,
            "original_line": 12,
            "start_line": None,
            "original_start_line": 10,
            "side": "RIGHT",
            "diff_hunk": "@@ -1 +1 @@",
            "body": "x",
            "user": None,
        }
    ).comment()
    assert (outdated.line, outdated.start_line, outdated.author) == (12, 10, "ghost")


async def test_failed_checks_name_what_failed_and_what_it_said(
    sandbox_forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox
) -> None:
    forge = sandbox_forges.for_installation(installation_id)
    sha = await forge.branch_sha(REPO, "main")
    assert sha is not None
    own = CheckRunSpec(
        name="ballet/config",
        head_sha=sha,
        status="completed",
        conclusion="failure",
        title="Bad .ballet.yml",
        summary="line 3",
        annotations=(Annotation(".ballet.yml", 3, 3, "unknown key"),),
    )
    await forge.create_check_run(REPO, own)
    lint_notes = [
        {"path": "a.py", "start_line": n, "end_line": n, "message": f"E{n}"} for n in (1, 2, 3)
    ]
    ci_runs: list[dict[str, Any]] = [
        {"name": "tests", "status": "completed", "conclusion": "success"},
        {"name": "build", "status": "completed", "conclusion": "timed_out"},
        {
            "name": "lint",
            "status": "completed",
            "conclusion": "failure",
            "output": {"title": "3 problems", "summary": "ruff", "annotations": lint_notes},
        },
    ]
    statuses = [
        {
            "state": "failure",
            "context": "ci/jenkins",
            "description": "2 failed",
            "target_url": "https://j/9",
        },
        {"state": "pending", "context": "deploy"},
        {"state": "error", "context": "docs"},
    ]
    async with httpx.AsyncClient(base_url=sandbox.api_url) as admin:
        for run in ci_runs:
            made = await admin.post(
                f"/_sandbox/repos/{REPO}/check-runs", json={**run, "head_sha": sha}
            )
            assert made.status_code == 201, made.text
        for status in statuses:
            posted = await admin.post(
                f"/repos/{REPO}/statuses/{sha}",
                json=status,
                headers={"Authorization": "token sandbox-user:writer"},
            )
            assert posted.status_code == 201, posted.text

    app_id = sandbox.sandbox.app.app_id
    failed = await forge.failed_checks(REPO, sha, ignore_app=app_id)
    assert failed.sha == sha and failed.checks_left_out == 0
    by_name = {c.name: c for c in failed.checks}
    assert sorted(by_name) == ["build", "ci/jenkins", "docs", "lint"]
    lint = by_name["lint"]
    assert (lint.kind, lint.conclusion, lint.title, lint.summary) == (
        "check_run",
        "failure",
        "3 problems",
        "ruff",
    )
    assert lint.url is not None and f"/{REPO}/runs/" in lint.url
    assert lint.annotations == tuple(
        CheckAnnotation("a.py", n, n, "failure", f"E{n}") for n in (1, 2, 3)
    )
    assert (by_name["build"].conclusion, by_name["build"].title, by_name["build"].annotations) == (
        "timed_out",
        "",
        (),
    )
    assert by_name["ci/jenkins"] == FailedCheck(
        "ci/jenkins", "status", "failure", summary="2 failed", url="https://j/9"
    )
    assert (by_name["docs"].kind, by_name["docs"].conclusion) == ("status", "error")

    bounded = await forge.failed_checks(REPO, sha, ignore_app=app_id, max_annotations=2)
    lint = next(c for c in bounded.checks if c.name == "lint")
    assert (len(lint.annotations), lint.annotations_left_out) == (2, 1)
    few = await forge.failed_checks(REPO, sha, ignore_app=app_id, max_checks=1)
    assert (len(few.checks), few.checks_left_out) == (1, 3)
    with_own = await forge.failed_checks(REPO, sha)
    config = next(c for c in with_own.checks if c.name == "ballet/config")
    assert (config.title, config.annotations) == (
        "Bad .ballet.yml",
        (CheckAnnotation(".ballet.yml", 3, 3, "failure", "unknown key"),),
    )
