"""Sub-issues, timeline cross-references and a repository's merge settings, in GitHub's
shapes (githubkit's models parse every answer) and with GitHub's refusals."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import RequestFailed

from .conftest import authed_url, installation_client, make_repo, push_branch, user_client


def test_sub_issues_and_their_parent(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    make_repo(admin)
    gh = user_client(sandbox, "triager")
    epic = gh.rest.issues.create("octo", "demo", title="Epic").parsed_data
    first = gh.rest.issues.create("octo", "demo", title="First").parsed_data
    second = gh.rest.issues.create("octo", "demo", title="Second").parsed_data
    for sub in (first, second):
        added = gh.rest.issues.add_sub_issue("octo", "demo", epic.number, sub_issue_id=sub.id)
        assert added.status_code == 201 and added.parsed_data.number == epic.number
    app = installation_client(sandbox)
    subs = app.rest.issues.list_sub_issues("octo", "demo", epic.number).parsed_data
    assert [s.number for s in subs] == [first.number, second.number]
    parent = app.rest.issues.get_parent("octo", "demo", second.number).parsed_data
    assert parent.number == epic.number
    child = app.rest.issues.get("octo", "demo", second.number).parsed_data
    assert child.parent_issue_url is not None and child.parent_issue_url.endswith(
        f"/issues/{epic.number}"
    )
    summary = app.rest.issues.get("octo", "demo", epic.number).parsed_data.sub_issues_summary
    assert summary is not None and (summary.total, summary.completed) == (2, 0)
    with pytest.raises(RequestFailed) as no_parent:
        app.rest.issues.get_parent("octo", "demo", epic.number)
    assert no_parent.value.response.status_code == 404
    with pytest.raises(RequestFailed) as twice:
        gh.rest.issues.add_sub_issue("octo", "demo", epic.number, sub_issue_id=first.id)
    assert twice.value.response.status_code == 422
    with pytest.raises(RequestFailed) as loop:
        gh.rest.issues.add_sub_issue("octo", "demo", first.number, sub_issue_id=epic.id)
    assert loop.value.response.status_code == 422
    reader = user_client(sandbox, "reader")
    with pytest.raises(RequestFailed) as forbidden:
        reader.rest.issues.add_sub_issue("octo", "demo", second.number, sub_issue_id=first.id)
    assert forbidden.value.response.status_code == 403


def test_the_timeline_cross_references_what_names_an_issue(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    make_repo(admin)
    make_repo(admin, name="other")
    gh = user_client(sandbox, "writer")
    target = gh.rest.issues.create("octo", "demo", title="Target").parsed_data
    gh.rest.issues.create("octo", "demo", title="Unrelated", body="see #999 and #10x")
    gh.rest.issues.create("octo", "demo", title="Body", body=f"After #{target.number}.")
    by_comment = gh.rest.issues.create("octo", "demo", title="Comment").parsed_data
    gh.rest.issues.create_comment(
        "octo", "demo", by_comment.number, body=f"relates to octo/demo#{target.number}"
    )
    gh.rest.issues.create("octo", "other", title="Elsewhere", body=f"octo/demo#{target.number}")
    gh.rest.issues.create_comment("octo", "demo", target.number, body="a plain comment")
    app = installation_client(sandbox)
    events = app.rest.issues.list_events_for_timeline("octo", "demo", target.number).parsed_data
    kinds = [e.event for e in events]  # type: ignore[union-attr]
    assert kinds.count("commented") == 1
    raw = app.request("GET", f"/repos/octo/demo/issues/{target.number}/timeline").json()
    sources = [
        (e["source"]["issue"]["repository_url"].rsplit("/", 1)[-1], e["source"]["issue"]["title"])
        for e in raw
        if e["event"] == "cross-referenced"
    ]
    assert sorted(sources) == [
        ("demo", "Body"),
        ("demo", "Comment"),
        ("other", "Elsewhere"),
    ]


def test_the_timeline_follows_texts_edited_and_deleted(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    # The timeline reads an index of texts by the numbers they name: an edit that
    # names the issue adds a reference, one that stops naming it or a deletion
    # takes it away, and a pull request's body counts as an issue's.
    make_repo(admin)
    gh = user_client(sandbox, "writer")
    target = gh.rest.issues.create("octo", "demo", title="Target").parsed_data
    later = gh.rest.issues.create("octo", "demo", title="Later", body="nothing yet").parsed_data
    named = gh.rest.issues.create("octo", "demo", title="Named").parsed_data
    comment = gh.rest.issues.create_comment(
        "octo", "demo", named.number, body=f"see #{target.number}"
    ).parsed_data
    dropped = gh.rest.issues.create("octo", "demo", title="Dropped").parsed_data
    gone = gh.rest.issues.create_comment(
        "octo", "demo", dropped.number, body=f"fixes #{target.number}"
    ).parsed_data
    app = installation_client(sandbox)

    def referrers() -> list[str]:
        raw = app.request("GET", f"/repos/octo/demo/issues/{target.number}/timeline").json()
        return sorted(
            e["source"]["issue"]["title"] for e in raw if e["event"] == "cross-referenced"
        )

    assert referrers() == ["Dropped", "Named"]
    gh.rest.issues.update("octo", "demo", later.number, body=f"now after #{target.number}")
    gh.rest.issues.update_comment("octo", "demo", comment.id, body=f"see #{target.number}0")
    gh.rest.issues.delete_comment("octo", "demo", gone.id)
    assert referrers() == ["Later"]
    gh.rest.issues.update("octo", "demo", later.number, body="no longer")
    assert referrers() == []


def test_merge_settings_are_read_and_changed_as_on_github(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin, merge_methods=["squash"], delete_branch_on_merge=True)
    app = installation_client(sandbox)
    repo = app.rest.repos.get("octo", "demo").parsed_data
    assert (repo.allow_squash_merge, repo.allow_merge_commit, repo.allow_rebase_merge) == (
        True,
        False,
        False,
    )
    assert repo.delete_branch_on_merge is True
    owner = user_client(sandbox, "octo")
    with pytest.raises(RequestFailed) as none_left:
        owner.rest.repos.update("octo", "demo", allow_squash_merge=False)
    assert none_left.value.response.status_code == 422
    writer = user_client(sandbox, "writer")
    with pytest.raises(RequestFailed) as not_admin:
        writer.rest.repos.update("octo", "demo", allow_rebase_merge=True)
    assert not_admin.value.response.status_code == 403
    head = push_branch(tmp_path, authed_url(sandbox, "sandbox-user:writer"), "topic", {"f": "x\n"})
    pr = app.rest.pulls.create("octo", "demo", title="T", head="topic", base="main").parsed_data
    with pytest.raises(RequestFailed) as refused:
        app.rest.pulls.merge("octo", "demo", pr.number, merge_method="rebase")
    assert refused.value.response.status_code == 405
    assert refused.value.response.json()["message"] == (
        "Rebase merges are not allowed on this repository."
    )
    updated = owner.rest.repos.update("octo", "demo", allow_rebase_merge=True).parsed_data
    assert updated.allow_rebase_merge is True
    app.rest.pulls.merge("octo", "demo", pr.number, merge_method="rebase", sha=head)
    # The repository deletes merged head branches itself.
    assert set(admin.get("/_sandbox/repos/octo/demo/state").json()["branches"]) == {"main"}
