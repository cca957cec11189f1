"""The refs and commit answers the sandbox keeps between ref writes (gitcache): every
read is what git says at that moment, whoever moved the ref and however."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import httpx
from ballet.sandbox import gitcache, gitrepo
from ballet.sandbox.server import BackgroundSandbox
from ballet.sandbox.state import Repo

from .conftest import authed_url, make_repo, push_branch, settle, token_for, user_client


def test_reads_follow_pushes_ref_updates_and_merges(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    main = make_repo(admin)["head_sha"]
    writer = httpx.Client(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:writer"}
    )
    api = "/repos/octo/demo"
    assert writer.get(f"{api}/branches/main").json()["commit"]["sha"] == main  # kept now

    url = authed_url(sandbox, token_for(sandbox))
    topic = push_branch(tmp_path, url, "topic", {"t.txt": "t"})
    assert writer.get(f"{api}/branches/topic").json()["commit"]["sha"] == topic
    pull = writer.post(f"{api}/pulls", json={"title": "t", "head": "topic", "base": "main"})
    number = pull.json()["number"]
    assert pull.json()["base"]["sha"] == main

    # The base moves by a push: the pull request shows the new base at once.
    moved = push_branch(tmp_path, url, "main", {"m.txt": "m"})
    shown = writer.get(f"{api}/pulls/{number}").json()
    assert (shown["base"]["sha"], shown["mergeable"], shown["changed_files"]) == (moved, True, 1)

    # ... and by the REST API: back to where it was, then a branch made and deleted.
    back = writer.patch(f"{api}/git/refs/heads/main", json={"sha": main, "force": True})
    assert back.status_code == 200, back.text
    assert writer.get(f"{api}/git/ref/heads/main").json()["object"]["sha"] == main
    assert writer.get(f"{api}/pulls/{number}").json()["base"]["sha"] == main
    made = writer.post(f"{api}/git/refs", json={"ref": "refs/heads/other", "sha": topic})
    assert made.status_code == 201, made.text
    assert admin.get("/_sandbox/repos/octo/demo/state").json()["branches"]["other"] == topic
    assert writer.delete(f"{api}/git/refs/heads/other").status_code == 204
    assert writer.get(f"{api}/git/ref/heads/other").status_code == 404

    # A merge moves the base: its new tip is what the branch shows.
    merged = writer.put(f"{api}/pulls/{number}/merge", json={"merge_method": "merge"})
    assert merged.status_code == 200, merged.text
    assert writer.get(f"{api}/branches/main").json()["commit"]["sha"] == merged.json()["sha"]
    settle(admin)
    gh = user_client(sandbox, "writer")
    assert (
        gh.rest.repos.get_branch("octo", "demo", "main").parsed_data.commit.sha
        == (merged.json()["sha"])
    )
    writer.close()


def test_refs_are_asked_of_git_while_a_writer_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "r.git"
    gitrepo.init_bare(path, "main")
    first = gitrepo.commit_files(path, {"a": "a"}, "one", [])
    gitrepo.update_ref(path, "refs/heads/main", first)
    repo = Repo(1, "o", "r", "main", path, datetime.now(UTC), {}, 1)

    async def scenario() -> None:
        assert gitcache.refs(repo) == {"refs/heads/main": first}
        assert gitcache.branch(repo, "main") == first
        second = gitrepo.commit_files(path, {"b": "b"}, "two", [first])
        async with repo.ref_lock:
            gitrepo.update_ref(path, "refs/heads/main", second, first)
            assert gitcache.branch(repo, "main") == second  # the writer sees its write
        assert gitcache.refs(repo) == {"refs/heads/main": second}  # released: read again
        assert gitcache.commit_info(repo, second).parents == (first,)
        assert gitcache.commit(repo, "main") == second  # a name is not kept
        assert gitcache.branch(repo, "gone") is None

    asyncio.run(scenario())


def test_the_webhook_backlog_is_shown(sandbox: BackgroundSandbox, admin: httpx.Client) -> None:
    make_repo(admin)
    settle(admin)
    shown = admin.get("/_sandbox/webhook").json()
    assert shown["waiting"] == 0
    assert shown["deliveries"] == len(admin.get("/_sandbox/deliveries").json()) > 0
    assert shown["url"] == sandbox.sandbox.hooks.url
