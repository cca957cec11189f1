"""The production adapter against the fake GitHub: tokens, pacing, rate limits, ETags."""

from __future__ import annotations

import asyncio

import pytest
from ballet.github.app import GitHubApp
from ballet.github.forge import CheckRunSpec, ForgeUnavailable, RateLimited, find_comment
from fake_github import APP_ID, INSTALLATION_ID, REPO, FakeGitHub

pytestmark = pytest.mark.anyio


async def test_two_forges_sharing_redis_fetch_the_installation_token_once(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    first = forges.for_installation(INSTALLATION_ID)
    second = forges.for_installation(INSTALLATION_ID)
    assert await first.default_branch(REPO) == "main"
    assert await second.permission(REPO, "Codertocat") == "admin"
    assert fake_github.token_requests == 1
    # Another installation has a token of its own.
    await forges.for_installation(INSTALLATION_ID + 1).default_branch(REPO)
    assert fake_github.token_requests == 2


async def test_secondary_rate_limit_defers_with_github_retry_after_then_succeeds(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    forge = forges.for_installation(INSTALLATION_ID)
    fake_github.fail_next(
        "POST",
        r"/repos/.*/issues/1/comments",
        403,
        {"message": "You have exceeded a secondary rate limit."},
        {"retry-after": "37"},
    )
    with pytest.raises(RateLimited) as caught:
        await forge.create_comment(REPO, 1, "hello")
    assert caught.value.retry_after_seconds == 37
    assert fake_github.comments_on(1) == []
    # The job runs again later (arq's deferral) and the write goes through.
    comment = await forge.create_comment(REPO, 1, "hello")
    assert [c.body for c in fake_github.comments_on(1)] == ["hello"]
    assert comment.author == fake_github.bot_login


async def test_secondary_rate_limit_named_only_by_its_message_waits_a_minute(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    forge = forges.for_installation(INSTALLATION_ID)
    fake_github.fail_next(
        "PATCH",
        r"/repos/.*/issues/comments/\d+",
        403,
        {"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
    )
    created = await forge.create_comment(REPO, 1, "a")
    with pytest.raises(RateLimited) as caught:
        await forge.edit_comment(REPO, created.id, "b")
    assert caught.value.retry_after_seconds == 60


async def test_primary_rate_limit_defers_until_the_reset(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    import time

    forge = forges.for_installation(INSTALLATION_ID)
    reset = int(time.time()) + 600
    fake_github.fail_next(
        "GET",
        r"/repos/[^/]+/[^/]+",
        403,
        {"message": "API rate limit exceeded"},
        {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
    )
    with pytest.raises(RateLimited) as caught:
        await forge.default_branch(REPO)
    assert 500 < caught.value.retry_after_seconds <= 600


async def test_server_errors_are_retried_a_bounded_number_of_times(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    forge = forges.for_installation(INSTALLATION_ID)
    fake_github.fail_next("GET", r"/repos/[^/]+/[^/]+", 502)
    assert await forge.default_branch(REPO) == "main"
    for _ in range(4):
        fake_github.fail_next("GET", r"/repos/[^/]+/[^/]+", 502)
    with pytest.raises(ForgeUnavailable):
        await forge.default_branch(REPO)
    # One try and two retries: the fourth queued failure is still waiting.
    assert len(fake_github.failures) == 1


async def test_writes_of_one_installation_are_serial_across_forges(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    fake_github.write_delay = 0.02
    a = forges.for_installation(INSTALLATION_ID)
    b = forges.for_installation(INSTALLATION_ID)
    await a.default_branch(REPO)  # mint the token first
    await asyncio.gather(*(f.create_comment(REPO, 5, f"c{i}") for i, f in enumerate([a, b] * 4)))
    assert len(fake_github.comments_on(5)) == 8
    assert fake_github.max_in_flight_writes == 1


async def test_conditional_get_revalidates_with_etag(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    fake_github.repos[REPO].files["main"] = {".ballet.yml": "trigger_label: go\n"}
    forge = forges.for_installation(INSTALLATION_ID)
    assert await forge.file_text(REPO, ".ballet.yml", "main") == "trigger_label: go\n"
    assert await forge.file_text(REPO, ".ballet.yml", "main") == "trigger_label: go\n"
    assert fake_github.not_modified == 1
    fake_github.repos[REPO].files["main"][".ballet.yml"] = "trigger_label: now\n"
    assert await forge.file_text(REPO, ".ballet.yml", "main") == "trigger_label: now\n"
    assert await forge.file_text(REPO, ".ballet.yml", "other") is None


async def test_comments_found_by_marker_and_labels_and_checks(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    forge = forges.for_installation(INSTALLATION_ID)
    await forge.create_comment(REPO, 3, "plain")
    mine = await forge.create_comment(REPO, 3, "text <!-- ballet:mark x -->")
    found = await find_comment(forge, REPO, 3, "<!-- ballet:mark x -->")
    assert found is not None and found.id == mine.id
    await forge.add_labels(REPO, 3, ("ballet:running",))
    await forge.remove_label(REPO, 3, "ballet:running")
    await forge.remove_label(REPO, 3, "ballet:running")  # absent: not an error
    assert fake_github.labels[(REPO, 3)] == []
    run_id = await forge.create_check_run(
        REPO, CheckRunSpec(name="ballet/implement", head_sha="b" * 40, status="in_progress")
    )
    await forge.update_check_run(
        REPO,
        run_id,
        CheckRunSpec(
            name="ballet/implement", head_sha="b" * 40, status="completed", conclusion="failure"
        ),
    )
    summary = await forge.checks_for_ref(REPO, "b" * 40)
    assert [c.name for c in summary.failed] == ["ballet/implement"]
    assert summary.combined_status == "none"


async def test_branch_pr_merge_and_ready_for_review(
    forges: GitHubApp, fake_github: FakeGitHub
) -> None:
    forge = forges.for_installation(INSTALLATION_ID)
    base = await forge.branch_sha(REPO, "main")
    assert base is not None
    await forge.create_branch(REPO, "ballet/1-x", base)
    await forge.create_branch(REPO, "ballet/1-x", base)  # a retry finds it there
    pr = await forge.open_draft_pr(
        REPO, head="ballet/1-x", base="main", title="t", body="Closes #1"
    )
    assert pr.draft and pr.head_sha == base
    found = await forge.find_pr_by_head(REPO, "ballet/1-x")
    assert found is not None and found.number == pr.number
    await forge.mark_ready_for_review(REPO, pr.number)
    assert not (await forge.get_pr(REPO, pr.number)).draft
    fake_github.prs[(REPO, pr.number)].mergeable = False
    assert (await forge.merge_pr(REPO, pr.number, method="squash")).status == "conflict"
    fake_github.prs[(REPO, pr.number)].mergeable = True
    merged = await forge.merge_pr(REPO, pr.number, method="squash")
    assert merged.status == "merged" and merged.sha == "m" * 40
    assert (await forge.merge_pr(REPO, pr.number, method="squash")).status == "merged"


async def test_git_remote_uses_the_installation_token(forges: GitHubApp) -> None:
    remote = await forges.for_installation(INSTALLATION_ID).git_remote(REPO)
    assert remote.url == f"https://github.com/{REPO}.git"
    assert remote.token.startswith(f"ghs_{INSTALLATION_ID}_")
    assert remote.token not in repr(remote)


async def test_app_identity_names_the_bot(forges: GitHubApp) -> None:
    identity = await forges.app_identity()
    assert identity.app_id == APP_ID and identity.bot_login == "ballet-test[bot]"
