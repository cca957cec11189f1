"""A branch behind its base as GitHub tells it: `blocked` while anything but being up to
date holds the pull request back too (a review missing, a required check pending), and
`behind` only where that is all; `compare` says how far apart the two are whatever the
pull request's state says.

Shapes are checked by githubkit's models, generated from GitHub's OpenAPI description
(and by tests/openapi/test_sandbox_compare_vs_openapi.py against the description itself).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from githubkit.exception import RequestFailed

from .conftest import authed_url, installation_client, make_repo, push_branch, user_client
from .test_rulesets import add_ruleset, checks_rule, open_pull, review_rule


def test_behind_is_said_only_where_being_out_of_date_is_all(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    number, head = open_pull(sandbox, tmp_path, {"feature.txt": "new\n"})
    writer_url = authed_url(sandbox, "sandbox-user:writer")
    push_branch(tmp_path, writer_url, "main", {"other.txt": "x\n"})
    add_ruleset(sandbox, review_rule(1), checks_rule("lint", strict=True))
    gh = installation_client(sandbox)

    def state() -> str | None:
        return gh.rest.pulls.get("octo", "demo", number).parsed_data.mergeable_state

    # Behind, a review missing and `lint` not reported: GitHub says only `blocked`.
    assert state() == "blocked"
    gh.rest.repos.create_commit_status("octo", "demo", head, state="success", context="lint")
    assert state() == "blocked"  # the review is still missing
    writer = user_client(sandbox, "writer")
    writer.rest.pulls.create_review("octo", "demo", number, event="APPROVE")
    assert state() == "behind"  # now being out of date is all that holds it back
    assert gh.rest.pulls.update_branch("octo", "demo", number).status_code == 202
    updated = gh.rest.pulls.get("octo", "demo", number).parsed_data.head.sha
    assert state() == "blocked"  # up to date; `lint` not yet reported on the new head
    gh.rest.repos.create_commit_status("octo", "demo", updated, state="success", context="lint")
    assert state() == "clean"


def test_compare_says_how_far_a_head_is_ahead_and_behind(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    made = make_repo(admin)
    base = made["head_sha"]
    writer_url = authed_url(sandbox, "sandbox-user:writer")
    topic = push_branch(tmp_path, writer_url, "topic", {"feature.txt": "new\n"})
    gh = installation_client(sandbox)

    ahead = gh.rest.repos.compare_commits("octo", "demo", "main...topic").parsed_data
    assert (ahead.status, ahead.ahead_by, ahead.behind_by) == ("ahead", 1, 0)
    assert ahead.merge_base_commit.sha == base and ahead.base_commit.sha == base
    assert [c.sha for c in ahead.commits] == [topic]
    assert [f.filename for f in ahead.files or []] == ["feature.txt"]

    main = push_branch(tmp_path, writer_url, "main", {"a.txt": "a\n"})
    push_branch(tmp_path, writer_url, "main", {"b.txt": "b\n"})
    apart = gh.rest.repos.compare_commits("octo", "demo", f"main...{topic}").parsed_data
    assert (apart.status, apart.ahead_by, apart.behind_by) == ("diverged", 1, 2)
    assert apart.merge_base_commit.sha == base and apart.total_commits == 1
    behind = gh.rest.repos.compare_commits("octo", "demo", f"octo:main...{main}").parsed_data
    assert (behind.status, behind.ahead_by, behind.behind_by, behind.commits) == (
        "behind",
        0,
        1,
        [],
    )
    same = gh.rest.repos.compare_commits("octo", "demo", "topic...topic").parsed_data
    assert (same.status, same.ahead_by, same.behind_by) == ("identical", 0, 0)

    for wrong in ("main...nowhere", "main..topic", "someone:main...topic"):
        with pytest.raises(RequestFailed) as missing:
            gh.rest.repos.compare_commits("octo", "demo", wrong)
        assert missing.value.response.status_code == 404, wrong
