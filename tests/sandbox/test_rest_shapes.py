"""Every REST response the App uses parses with githubkit's models: githubkit is the client.

githubkit validates each response body against GitHub's schema when
`parsed_data` is read, so a wrong shape fails these tests.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import RequestFailed
from githubkit_schemas.latest.models import (
    BranchWithProtection,
    CheckRun,
    CombinedCommitStatus,
    Commit,
    ContentFile,
    DiffEntry,
    FullRepository,
    GitCommit,
    GitRef,
    Issue,
    IssueComment,
    Label,
    PullRequest,
    PullRequestMergeResult,
    PullRequestReview,
    PullRequestSimple,
    Reaction,
    RepositoryCollaboratorPermission,
    Status,
)

from .conftest import (
    authed_url,
    git,
    installation_client,
    make_repo,
    push_branch,
    token_for,
)


def items(data: object) -> list[Any]:
    """githubkit's list results, typed for mypy (its `list[...]` annotations confuse it)."""
    assert isinstance(data, list)
    return data


def test_repository_contents_refs_and_branches(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    created = make_repo(admin, files={"README.md": "# demo\n", "src/app.py": "print(1)\n"})
    gh = installation_client(sandbox)
    repo = gh.rest.repos.get("octo", "demo").parsed_data
    assert isinstance(repo, FullRepository)
    assert repo.default_branch == "main"
    assert repo.clone_url == created["clone_url"]

    content = gh.rest.repos.get_content("octo", "demo", "src/app.py", ref="main").parsed_data
    assert isinstance(content, ContentFile)
    assert base64.b64decode(content.content) == b"print(1)\n"
    listing = gh.rest.repos.get_content("octo", "demo", "src").parsed_data
    assert isinstance(listing, list)
    assert [entry.path for entry in listing] == ["src/app.py"]

    ref = gh.rest.git.get_ref("octo", "demo", "heads/main").parsed_data
    assert isinstance(ref, GitRef)
    assert ref.object_.sha == created["head_sha"]
    made = gh.rest.git.create_ref("octo", "demo", ref="refs/heads/topic", sha=ref.object_.sha)
    assert made.status_code == 201
    assert made.parsed_data.ref == "refs/heads/topic"
    branch = gh.rest.repos.get_branch("octo", "demo", "topic").parsed_data
    assert isinstance(branch, BranchWithProtection)
    assert branch.commit.sha == created["head_sha"]
    assert gh.rest.git.delete_ref("octo", "demo", "heads/topic").status_code == 204

    permission = gh.rest.repos.get_collaborator_permission_level("octo", "demo", "triager")
    assert isinstance(permission.parsed_data, RepositoryCollaboratorPermission)
    assert permission.parsed_data.role_name == "triage"
    assert permission.parsed_data.permission == "read"


def test_issues_comments_labels_and_reactions(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    gh = installation_client(sandbox)
    issue = gh.rest.issues.create("octo", "demo", title="Add a thing", body="please").parsed_data
    assert isinstance(issue, Issue)
    assert issue.number == 1
    assert issue.user is not None and issue.user.login == "ballet[bot]"
    assert issue.user.type == "Bot"

    labels = gh.rest.issues.add_labels("octo", "demo", 1, labels=["ballet", "docs"]).parsed_data
    assert all(isinstance(label, Label) for label in items(labels))
    assert [label.name for label in items(labels)] == ["ballet", "docs"]
    after_remove = gh.rest.issues.remove_label("octo", "demo", 1, "docs").parsed_data
    assert [label.name for label in items(after_remove)] == ["ballet"]
    replaced = gh.rest.issues.set_labels("octo", "demo", 1, labels=["bug"]).parsed_data
    assert [label.name for label in items(replaced)] == ["bug"]

    comment = gh.rest.issues.create_comment("octo", "demo", 1, body="hello").parsed_data
    assert isinstance(comment, IssueComment)
    assert comment.performed_via_github_app is not None
    assert getattr(comment.performed_via_github_app, "slug", None) == "ballet"
    edited = gh.rest.issues.update_comment("octo", "demo", comment.id, body="hello again")
    assert edited.parsed_data.body == "hello again"
    fetched = gh.rest.issues.get_comment("octo", "demo", comment.id).parsed_data
    assert fetched.body == "hello again"
    listed = gh.rest.issues.list_comments("octo", "demo", 1).parsed_data
    assert [c.id for c in items(listed)] == [comment.id]
    reaction = gh.rest.reactions.create_for_issue_comment(
        "octo", "demo", comment.id, content="eyes"
    ).parsed_data
    assert isinstance(reaction, Reaction)
    assert reaction.content == "eyes"

    updated = gh.rest.issues.update("octo", "demo", 1, title="Renamed", state="closed")
    assert updated.parsed_data.title == "Renamed"
    assert updated.parsed_data.state == "closed"
    open_issues = gh.rest.issues.list_for_repo("octo", "demo").parsed_data
    assert open_issues == []
    all_issues = gh.rest.issues.list_for_repo("octo", "demo", state="all").parsed_data
    assert [i.number for i in items(all_issues)] == [1]
    assert gh.rest.issues.get("octo", "demo", 1).parsed_data.comments == 1
    assert gh.rest.issues.delete_comment("octo", "demo", comment.id).status_code == 204
    assert gh.rest.issues.list_comments("octo", "demo", 1).parsed_data == []


def test_pull_request_lifecycle(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    token = token_for(sandbox)
    head_sha = push_branch(tmp_path, authed_url(sandbox, token), "ballet/1-thing", {"a.txt": "a"})
    gh = installation_client(sandbox)
    pr = gh.rest.pulls.create(
        "octo", "demo", title="Thing", head="ballet/1-thing", base="main", body="b", draft=True
    ).parsed_data
    assert isinstance(pr, PullRequest)
    assert pr.draft is True
    assert pr.head.sha == head_sha

    listed = gh.rest.pulls.list("octo", "demo", head="octo:ballet/1-thing", state="open")
    assert all(isinstance(p, PullRequestSimple) for p in listed.parsed_data)
    assert [p.number for p in listed.parsed_data] == [pr.number]
    assert gh.rest.pulls.list("octo", "demo", head="octo:other").parsed_data == []

    updated = gh.rest.pulls.update("octo", "demo", pr.number, body="new body").parsed_data
    assert updated.body == "new body"

    ready = gh.graphql(
        "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) "
        "{ pullRequest { isDraft } } }",
        {"id": pr.node_id},
    )
    assert ready["markPullRequestReadyForReview"]["pullRequest"]["isDraft"] is False
    assert gh.rest.pulls.get("octo", "demo", pr.number).parsed_data.draft is False

    with_reviewers = gh.rest.pulls.request_reviewers(
        "octo", "demo", pr.number, reviewers=["writer"]
    ).parsed_data
    assert isinstance(with_reviewers, PullRequestSimple)
    assert [u.login for u in with_reviewers.requested_reviewers or []] == ["writer"]

    review = gh.rest.pulls.create_review(
        "octo", "demo", pr.number, event="COMMENT", body="looks fine"
    ).parsed_data
    assert isinstance(review, PullRequestReview)
    assert [
        r.id for r in items(gh.rest.pulls.list_reviews("octo", "demo", pr.number).parsed_data)
    ] == [review.id]

    result = gh.rest.pulls.merge(
        "octo", "demo", pr.number, merge_method="squash", sha=head_sha
    ).parsed_data
    assert isinstance(result, PullRequestMergeResult)
    assert result.merged is True
    main = gh.rest.git.get_ref("octo", "demo", "heads/main").parsed_data
    assert main.object_.sha == result.sha
    merged = gh.rest.pulls.get("octo", "demo", pr.number).parsed_data
    assert merged.merged is True
    assert merged.state == "closed"


def test_check_runs_and_statuses(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    created = make_repo(admin)
    sha = created["head_sha"]
    gh = installation_client(sandbox)
    run = gh.rest.checks.create(
        "octo", "demo", name="ballet/config", head_sha=sha, status="in_progress"
    ).parsed_data
    assert isinstance(run, CheckRun)
    done = gh.rest.checks.update(
        "octo",
        "demo",
        run.id,
        conclusion="failure",
        output={"title": "bad", "summary": "line 3", "text": "details"},
    ).parsed_data
    assert done.status == "completed"
    assert done.conclusion == "failure"
    runs = gh.rest.checks.list_for_ref("octo", "demo", "main").parsed_data
    assert [r.id for r in runs.check_runs] == [run.id]
    suites = gh.rest.checks.list_suites_for_ref("octo", "demo", sha).parsed_data
    assert [s.conclusion for s in suites.check_suites] == ["failure"]

    status = gh.rest.repos.create_commit_status(
        "octo", "demo", sha, state="success", context="ballet"
    ).parsed_data
    assert isinstance(status, Status)
    combined = gh.rest.repos.get_combined_status_for_ref("octo", "demo", "main").parsed_data
    assert isinstance(combined, CombinedCommitStatus)
    assert combined.state == "success"
    assert [s.context for s in combined.statuses] == ["ballet"]


def test_git_commits_and_pull_request_files(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    created = make_repo(admin, files={"README.md": "# demo\n", "old.txt": "x\n"})
    gh = installation_client(sandbox)
    base = gh.rest.git.get_commit("octo", "demo", created["head_sha"]).parsed_data
    assert isinstance(base, GitCommit)
    assert base.message == "Initial commit"
    # An empty commit on top, as Ballet seeds a ticket branch.
    seed = gh.rest.git.create_commit(
        "octo", "demo", message="ballet: start #1", tree=base.tree.sha, parents=[base.sha]
    ).parsed_data
    assert [p.sha for p in seed.parents] == [base.sha]
    assert seed.tree.sha == base.tree.sha

    token = token_for(sandbox)
    clone = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", authed_url(sandbox, token), str(clone))
    git(clone, "checkout", "--quiet", "-b", "topic")
    (clone / "new.txt").write_text("one\ntwo\n")
    (clone / "old.txt").unlink()
    git(clone, "add", "-A")
    git(clone, "commit", "--quiet", "-m", "change files")
    git(clone, "push", "--quiet", "origin", "topic")
    pr = gh.rest.pulls.create("octo", "demo", title="t", head="topic", base="main").parsed_data
    files = gh.rest.pulls.list_files("octo", "demo", pr.number).parsed_data
    assert all(isinstance(f, DiffEntry) for f in items(files))
    assert {(f.filename, f.status, f.additions, f.deletions) for f in items(files)} == {
        ("new.txt", "added", 2, 0),
        ("old.txt", "removed", 0, 1),
    }
    counted = gh.rest.pulls.get("octo", "demo", pr.number).parsed_data
    assert (counted.commits, counted.additions, counted.deletions, counted.changed_files) == (
        1,
        2,
        1,
        2,
    )


def test_repository_labels_and_commits(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    created = make_repo(admin)
    gh = installation_client(sandbox)
    made = gh.rest.issues.create_label(
        "octo", "demo", name="ballet:question", color="d73a4a", description="needs a person"
    ).parsed_data
    assert isinstance(made, Label)
    assert (made.color, made.description) == ("d73a4a", "needs a person")
    with pytest.raises(RequestFailed) as twice:
        gh.rest.issues.create_label("octo", "demo", name="ballet:question")
    assert twice.value.response.status_code == 422
    gh.rest.issues.create("octo", "demo", title="t", labels=["ballet", "ballet:question"])
    names = [
        lab.name for lab in items(gh.rest.issues.list_labels_for_repo("octo", "demo").parsed_data)
    ]
    assert names == ["ballet", "ballet:question"]
    on_issue = gh.rest.issues.list_labels_on_issue("octo", "demo", 1).parsed_data
    assert [lab.color for lab in items(on_issue)] == ["ededed", "d73a4a"]

    commit = gh.rest.repos.get_commit("octo", "demo", created["head_sha"]).parsed_data
    assert isinstance(commit, Commit)
    assert commit.sha == created["head_sha"]
    assert commit.commit.message == "Initial commit"
