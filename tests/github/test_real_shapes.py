"""Shapes GitHub documents that Ballet met only in production before: the
sandbox now sends them, and the production adapter reads them.

- an issue comment whose author's account was deleted (`"user": null`);
- `GET /pulls` items, which carry no `merged` or `mergeable*`;
- other Apps' check runs in GitHub Actions' own statuses (`waiting`,
  `requested`, `pending`), and one in a shape nobody documents.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from ballet.github import models as m
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.sandbox.server import BackgroundSandbox
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

REPO = "octo/shapes"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[BackgroundSandbox]:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        yield running


@pytest.fixture
def installation_id(sandbox: BackgroundSandbox) -> int:
    with httpx.Client(base_url=sandbox.api_url, timeout=30) as admin:
        response = admin.post(
            "/_sandbox/repos",
            json={"owner": "octo", "name": "shapes", "collaborators": {"leaver": "write"}},
        )
        assert response.status_code == 201, response.text
        return int(response.json()["installation_id"])


@pytest.fixture
async def forges(sandbox: BackgroundSandbox, redis: Redis) -> AsyncIterator[GitHubApp]:
    app = sandbox.sandbox.app
    made = GitHubApp(
        GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), sandbox.api_url),
        redis,
        write_spacing_seconds=0.0,
    )
    yield made
    await made.aclose()


async def test_a_deleted_authors_comment_reads_as_ghost(
    forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox
) -> None:
    forge = forges.for_installation(installation_id)
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:leaver"}
    ) as leaver:
        issue = (await leaver.post(f"/repos/{REPO}/issues", json={"title": "t"})).json()
        await leaver.post(f"/repos/{REPO}/issues/{issue['number']}/comments", json={"body": "hi"})
        gone = await leaver.delete("/_sandbox/users/leaver")
        assert gone.status_code == 204
        raw = await leaver.get(f"/repos/{REPO}/issues/{issue['number']}/comments")
    assert [c["user"] for c in raw.json()] == [None]
    (comment,) = await forge.list_comments(REPO, issue["number"])
    assert (comment.author, comment.body) == ("ghost", "hi")


async def test_pull_list_items_lack_mergeability_and_still_read(
    forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox
) -> None:
    forge = forges.for_installation(installation_id)
    main = await forge.branch_sha(REPO, "main")
    assert main is not None
    await forge.create_branch(REPO, "topic", main, seed_message="start")
    opened = await forge.open_draft_pr(REPO, head="topic", base="main", title="t", body="b")
    async with httpx.AsyncClient(base_url=sandbox.api_url) as client:
        raw = (
            await client.get(
                f"/repos/{REPO}/pulls", headers={"Authorization": "token sandbox-user:leaver"}
            )
        ).json()
    assert "merged" not in raw[0] and "mergeable" not in raw[0] and "mergeable_state" not in raw[0]
    found = await forge.find_pr_by_head(REPO, "topic")
    assert found is not None and found.number == opened.number
    assert (found.merged, found.mergeable, found.state) == (False, None, "open")


async def test_actions_statuses_of_other_apps_count_as_pending(
    forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox
) -> None:
    forge = forges.for_installation(installation_id)
    sha = await forge.branch_sha(REPO, "main")
    assert sha is not None
    runs = [
        {"name": "deploy", "status": "waiting"},
        {"name": "queued-job", "status": "requested"},
        {"name": "grouped", "status": "pending"},
        {"name": "lint", "status": "completed", "conclusion": "failure"},
    ]
    async with httpx.AsyncClient(base_url=sandbox.api_url) as admin:
        for run in runs:
            made = await admin.post(
                f"/_sandbox/repos/{REPO}/check-runs", json={**run, "head_sha": sha}
            )
            assert made.status_code == 201, made.text
    checks = await forge.checks_for_ref(REPO, sha)
    assert sorted(c.name for c in checks.pending) == ["deploy", "grouped", "queued-job"]
    assert {c.status for c in checks.pending} == {"queued"}
    assert [c.name for c in checks.failed] == ["lint"]


def test_an_unreadable_check_run_of_another_app_is_skipped_not_fatal() -> None:
    listed = m.CheckRunList.model_validate(
        {
            "total_count": 3,
            "check_runs": [
                {"id": 1, "name": "ours", "status": "completed", "conclusion": "success"},
                {"name": "no id", "status": "some_future_status"},
                {"id": 3, "name": "held", "status": "waiting"},
            ],
        }
    )
    assert [(r.id, r.status) for r in listed.check_runs] == [(1, "completed"), (3, "waiting")]


async def test_a_branch_is_read_with_its_tree_and_seeded_with_an_empty_commit(
    forges: GitHubApp, installation_id: int
) -> None:
    forge = forges.for_installation(installation_id)
    head = await forge.branch_head(REPO, "main")
    assert head is not None and head.sha == await forge.branch_sha(REPO, "main")
    assert await forge.branch_head(REPO, "no-such-branch") is None
    await forge.create_branch(REPO, "seeded", head.sha, seed_message="start", seed_tree=head.tree)
    seeded = await forge.branch_head(REPO, "seeded")
    # One commit on top of main's, changing nothing: what a draft PR can be opened from.
    assert seeded is not None and seeded.sha != head.sha and seeded.tree == head.tree
