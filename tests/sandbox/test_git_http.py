"""Repositories over git's smart HTTP: token authentication, pushes announced as webhooks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox

from .conftest import (
    Receiver,
    authed_url,
    git,
    installation_client,
    make_repo,
    push_branch,
    settle,
    token_for,
)


def test_clone_and_push_with_installation_token(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    make_repo(admin, files={"README.md": "# hello\n"})
    url = authed_url(sandbox, token_for(sandbox))
    git(tmp_path, "clone", "--quiet", url, str(tmp_path / "c"))
    assert (tmp_path / "c" / "README.md").read_text() == "# hello\n"

    sha = push_branch(tmp_path, url, "feature", {"f.txt": "f"})
    state = admin.get("/_sandbox/repos/octo/demo/state").json()
    assert state["branches"]["feature"] == sha
    settle(admin)
    pushes = [r.payload for r in receiver.received if r.event == "push"]
    assert pushes[-1]["ref"] == "refs/heads/feature"
    assert pushes[-1]["after"] == sha
    assert pushes[-1]["created"] is True
    assert [c["id"] for c in pushes[-1]["commits"]] == [sha]  # only the new commit


def test_fetch_and_push_are_refused_without_a_good_token(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    anonymous = f"{sandbox.api_url}/octo/demo.git"
    with pytest.raises(AssertionError, match=r"Authentication failed|could not read|401"):
        git(tmp_path, "clone", "--quiet", anonymous, str(tmp_path / "a"))
    with pytest.raises(AssertionError, match=r"Authentication failed|401"):
        git(tmp_path, "clone", "--quiet", authed_url(sandbox, "ghs_forged"), str(tmp_path / "b"))


def test_reader_can_clone_but_not_push(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    make_repo(admin)
    with pytest.raises(AssertionError, match=r"403|denied|Must have write"):
        push_branch(tmp_path, authed_url(sandbox, "sandbox-user:reader"), "x", {"x": "x"})
    sha = push_branch(tmp_path, authed_url(sandbox, "sandbox-user:writer"), "w", {"w": "w"})
    assert admin.get("/_sandbox/repos/octo/demo/state").json()["branches"]["w"] == sha


def test_push_to_a_pull_request_head_synchronizes_it(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    make_repo(admin)
    url = authed_url(sandbox, token_for(sandbox))
    first = push_branch(tmp_path, url, "topic", {"a": "1"})
    gh = installation_client(sandbox)
    pr = gh.rest.pulls.create("octo", "demo", title="t", head="topic", base="main").parsed_data
    second = push_branch(tmp_path, url, "topic", {"b": "2"}, start="topic")
    assert gh.rest.pulls.get("octo", "demo", pr.number).parsed_data.head.sha == second
    settle(admin)
    sync = [
        r.payload
        for r in receiver.received
        if r.event == "pull_request" and r.payload["action"] == "synchronize"
    ]
    assert len(sync) == 1
    assert (sync[0]["before"], sync[0]["after"]) == (first, second)
    assert sync[0]["pull_request"]["head"]["sha"] == second


def test_a_broken_push_releases_the_repository(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    created = make_repo(admin)
    broken = admin.post(
        "/octo/demo.git/git-receive-pack",
        content=b"this is not a pack",
        headers={
            "Authorization": "token sandbox-user:writer",
            "Content-Type": "application/x-git-receive-pack-request",
        },
    )
    assert broken.status_code == 200  # git reports the failure inside its own protocol
    # The ref lock is free again: a ref change through the API goes through.
    made = admin.post(
        "/repos/octo/demo/git/refs",
        json={"ref": "refs/heads/after", "sha": created["head_sha"]},
        headers={"Authorization": "token sandbox-user:writer"},
    )
    assert made.status_code == 201


def test_git_protocol_v2_is_spoken_as_github_speaks_it(
    sandbox: BackgroundSandbox, admin: httpx.Client, tmp_path: Path
) -> None:
    """The client's Git-Protocol header reaches upload-pack (GIT_PROTOCOL): git's own
    client and Ballet's look at the refs (sessions/remote_refs.py) speak v2, as with GitHub."""
    make_repo(admin)
    sha = push_branch(tmp_path, authed_url(sandbox, token_for(sandbox)), "topic", {"t": "t"})
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_TRACE_PACKET": "1"}
    listed = subprocess.run(
        ["git", "-c", "protocol.version=2", "ls-remote", authed_url(sandbox, token_for(sandbox))],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "git< version 2" in listed.stderr  # the server's v2 capability advertisement
    assert "> command=ls-refs" in listed.stderr  # and its v2 command
    refs = dict(reversed(line.split("\t")) for line in listed.stdout.splitlines())
    assert refs["refs/heads/topic"] == sha
