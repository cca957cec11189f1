"""Merging pull requests really moves the base branch; refusals come with GitHub's codes."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Literal

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import RequestFailed

from .conftest import (
    Receiver,
    authed_url,
    git,
    installation_client,
    make_repo,
    push_branch,
    settle,
)


def _setup(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path, **spec: object
) -> tuple[str, str]:
    created = make_repo(admin, **spec)
    url = authed_url(sandbox, "sandbox-user:writer")
    head = push_branch(tmp_path, url, "topic", {"feature.txt": "new\n"})
    return created["head_sha"], head


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
def test_merge_moves_the_base_branch(
    sandbox: BackgroundSandbox,
    admin: httpx.Client,
    tmp_path: Path,
    method: Literal["merge", "squash", "rebase"],
) -> None:
    base, head = _setup(sandbox, admin, tmp_path)
    gh = installation_client(sandbox)
    pr = gh.rest.pulls.create("octo", "demo", title="Feature", head="topic", base="main")
    result = gh.rest.pulls.merge(
        "octo", "demo", pr.parsed_data.number, merge_method=method, sha=head
    ).parsed_data
    main = admin.get("/_sandbox/repos/octo/demo/state").json()["branches"]["main"]
    merged = gh.rest.pulls.get("octo", "demo", pr.parsed_data.number).parsed_data
    assert (merged.merged, merged.changed_files, merged.additions) == (True, 1, 1)
    assert main == result.sha != base
    commit = gh.rest.git.get_commit("octo", "demo", main).parsed_data
    parents = [p.sha for p in commit.parents]
    assert parents == {"merge": [base, head], "squash": [base], "rebase": [base]}[method]
    content = gh.rest.repos.get_content("octo", "demo", "feature.txt", ref="main").parsed_data
    assert base64.b64decode(content.content) == b"new\n"  # type: ignore[union-attr]


def test_refusals(sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path) -> None:
    _, head = _setup(sandbox, admin, tmp_path, merge_methods=["squash"])
    gh = installation_client(sandbox)
    draft = gh.rest.pulls.create(
        "octo", "demo", title="t", head="topic", base="main", draft=True
    ).parsed_data
    with pytest.raises(RequestFailed) as refused:
        gh.rest.pulls.merge("octo", "demo", draft.number, merge_method="squash")
    assert refused.value.response.status_code == 405
    gh.graphql(
        "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id})"
        " { pullRequest { isDraft } } }",
        {"id": draft.node_id},
    )
    with pytest.raises(RequestFailed) as not_allowed:
        gh.rest.pulls.merge("octo", "demo", draft.number, merge_method="merge")
    assert not_allowed.value.response.status_code == 405
    with pytest.raises(RequestFailed) as moved:
        gh.rest.pulls.merge("octo", "demo", draft.number, merge_method="squash", sha="0" * 40)
    assert moved.value.response.status_code == 409
    assert "Head branch was modified" in moved.value.response.json()["message"]
    assert admin.get("/_sandbox/repos/octo/demo/state").json()["pulls"][0]["merged"] is False
    assert gh.rest.pulls.merge("octo", "demo", draft.number, merge_method="squash", sha=head)


def test_conflict_is_not_mergeable_and_update_branch_reports_it(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    url = authed_url(sandbox, "sandbox-user:writer")
    push_branch(tmp_path, url, "topic", {"README.md": "topic's readme\n"})
    push_branch(tmp_path, url, "main", {"README.md": "main's readme\n"})
    gh = installation_client(sandbox)
    pr = gh.rest.pulls.create("octo", "demo", title="t", head="topic", base="main").parsed_data
    fetched = gh.rest.pulls.get("octo", "demo", pr.number).parsed_data
    assert (fetched.mergeable, fetched.mergeable_state) == (False, "dirty")
    with pytest.raises(RequestFailed) as conflict:
        gh.rest.pulls.merge("octo", "demo", pr.number)
    assert conflict.value.response.status_code == 405
    with pytest.raises(RequestFailed) as update:
        gh.rest.pulls.update_branch("octo", "demo", pr.number)
    assert update.value.response.status_code == 422
    assert "conflict" in update.value.response.json()["message"]


def test_update_branch_merges_the_base_into_the_head(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    _, head = _setup(sandbox, admin, tmp_path)
    url = authed_url(sandbox, "sandbox-user:writer")
    new_base = push_branch(tmp_path, url, "main", {"other.txt": "x\n"})
    gh = installation_client(sandbox)
    pr = gh.rest.pulls.create("octo", "demo", title="t", head="topic", base="main").parsed_data
    assert gh.rest.pulls.update_branch("octo", "demo", pr.number).status_code == 202
    updated = gh.rest.pulls.get("octo", "demo", pr.number).parsed_data
    commit = gh.rest.git.get_commit("octo", "demo", updated.head.sha).parsed_data
    assert [p.sha for p in commit.parents] == [head, new_base]
    settle(admin)
    sync = [r.payload for r in receiver.received if r.payload.get("action") == "synchronize"]
    assert [(s["before"], s["after"]) for s in sync] == [(head, updated.head.sha)]
    clone = tmp_path / "check"
    git(tmp_path, "clone", "--quiet", "--branch", "topic", url, str(clone))
    assert (clone / "other.txt").exists() and (clone / "feature.txt").exists()
