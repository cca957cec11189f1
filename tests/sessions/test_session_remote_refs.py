"""A mirror's refresh asks GitHub's heads and tags first (sessions/remote_refs.py) and
fetches only when they differ from the mirror's: against the sandbox's git over real
HTTP, with its request log telling whether a `git fetch` ran (git's fetch begins with
`GET info/refs`; the look at the refs is one POST)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.auth import issue_token
from ballet.sandbox.server import BackgroundSandbox
from ballet.sessions import GitIdentity, Workspaces
from ballet.sessions.branch_writes import MirrorBranches
from ballet.sessions.mirror import locked
from ballet.sessions.remote_refs import UnknownRefs, parse_ls_refs, pkt_line

REPO = "octo/demo"
BOT = GitIdentity("ballet-app[bot]", "ballet-app[bot]@users.noreply.github.com")
A, B = "a" * 40, "b" * 40


def _token(sandbox: BackgroundSandbox) -> str:
    """An installation token: the sandbox logs the App's requests, git's included."""
    sb = sandbox.sandbox
    return issue_token(sb, sb.installation_for("octo"), datetime.now(UTC)).token


def _origin(sandbox: BackgroundSandbox) -> Path:
    repo = sandbox.sandbox.repo("octo", "demo")
    assert repo is not None
    return repo.path


def _git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        **{f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
           for what, value in (("NAME", "t"), ("EMAIL", "t@example.com"))},
    }  # fmt: skip
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _commit(origin: Path, on: str) -> str:
    """A new commit on `on`'s head, written straight into GitHub's (the sandbox's) repo."""
    tree = _git(origin, "rev-parse", f"{on}^{{tree}}")
    return _git(origin, "commit-tree", tree, "-p", on, "-m", f"moved at {time.monotonic()}")


def _refs(repo: Path) -> dict[str, str]:
    out = _git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
    return dict(line.split(" ", 1) for line in out.splitlines())


def _git_requests(sandbox: BackgroundSandbox, since: int) -> list[str]:
    """The git requests logged since the `since`-th entry: the log is written as each
    request's handler returns, a moment after its client has the answer, so this
    waits until no entry came for 0.3 s."""
    count, quiet_since = -1, time.monotonic()
    while time.monotonic() - quiet_since < 0.3:
        if len(sandbox.sandbox.requests) != count:
            count, quiet_since = len(sandbox.sandbox.requests), time.monotonic()
        time.sleep(0.02)
    return [
        f"{entry['method']} {entry['path'].removeprefix('/octo/demo.git/')}"
        for entry in sandbox.sandbox.requests[since:]
        if entry["path"].startswith("/octo/demo.git/")
    ]


FETCHED = "GET info/refs"  # how every `git fetch` over HTTP begins
LOOKED = ["POST git-upload-pack"]  # the look at the refs alone


def _run(scenario: Callable[[httpx.AsyncClient], Awaitable[None]]) -> None:
    async def main() -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            await scenario(client)

    asyncio.run(main())


def test_refs_unmoved_skip_the_fetch_and_the_mirror_stays_github_s(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    url, token, origin = f"{sandbox.api_url}/{REPO}.git", _token(sandbox), _origin(sandbox)
    _git(origin, "tag", "-a", "v1", "-m", "an annotated tag: its own object's id", "main")
    _git(origin, "tag", "light", "main")

    async def scenario(client: httpx.AsyncClient) -> None:
        workspaces = Workspaces(tmp_path / "ws", refs_http=client)
        mark = len(sandbox.sandbox.requests)
        mirror = await workspaces.refresh(REPO, url, token)  # a new mirror: fetched
        assert FETCHED in _git_requests(sandbox, mark)

        mark = len(sandbox.sandbox.requests)
        since = time.monotonic()
        assert await workspaces.refresh(REPO, url, token, since=since) == mirror
        assert _git_requests(sandbox, mark) == LOOKED
        assert _refs(mirror) == _refs(origin)
        # The look counts as a fetch begun after `since`: a session launched before it
        # takes it, with no request at all.
        mark = len(sandbox.sandbox.requests)
        await workspaces.refresh(REPO, url, token, since=since)
        assert _git_requests(sandbox, mark) == []

        # Ballet's own push, which the mirror takes (mirror.take_pushed): the next
        # session's refresh finds GitHub at the mirror's refs and fetches nothing.
        branches = MirrorBranches(workspaces, BOT)
        await branches.start_branch(
            REPO, url=url, token=token, branch="ballet/1-x", base="main", message="Start"
        )
        mark = len(sandbox.sandbox.requests)
        await workspaces.refresh(REPO, url, token, since=time.monotonic())
        assert _git_requests(sandbox, mark) == LOOKED
        assert _refs(mirror) == _refs(origin)
        assert "refs/heads/ballet/1-x" in _refs(mirror)

    _run(scenario)


def test_moved_new_deleted_branches_and_new_tags_are_fetched(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    url, token, origin = f"{sandbox.api_url}/{REPO}.git", _token(sandbox), _origin(sandbox)
    _git(origin, "branch", "old", "main")
    _git(origin, "tag", "gone", "main")
    _git(origin, "tag", "moved-tag", "main")

    async def scenario(client: httpx.AsyncClient) -> None:
        workspaces = Workspaces(tmp_path / "ws", refs_http=client)
        mirror = await workspaces.refresh(REPO, url, token)
        assert "refs/heads/old" in _refs(mirror)
        changes: list[Callable[[], object]] = [
            lambda: _git(origin, "update-ref", "refs/heads/main", _commit(origin, "main")),
            lambda: _git(origin, "branch", "new", "main"),
            lambda: _git(origin, "branch", "-D", "old"),  # the mirror must prune it
            lambda: _git(origin, "tag", "-a", "v2", "-m", "new", "main"),
            lambda: _git(origin, "tag", "-d", "gone"),
            lambda: _git(origin, "tag", "-f", "moved-tag", _commit(origin, "main")),
        ]
        for change in changes:
            change()
            mark = len(sandbox.sandbox.requests)
            await workspaces.refresh(REPO, url, token, since=time.monotonic())
            assert FETCHED in _git_requests(sandbox, mark)
            assert _refs(mirror) == _refs(origin)
            mark = len(sandbox.sandbox.requests)
            await workspaces.refresh(REPO, url, token, since=time.monotonic())
            assert _git_requests(sandbox, mark) == LOOKED  # and then nothing to fetch
        assert "refs/heads/old" not in _refs(mirror)
        assert "refs/tags/gone" not in _refs(mirror)

    _run(scenario)


def _answering(kind: str) -> Callable[[httpx.Request], Awaitable[httpx.Response]]:
    """What a remote may answer instead of a v2 `ls-refs` answer. "v0": the sandbox's
    real answer when the client's Git-Protocol header does not reach it."""
    result = {"content-type": "application/x-git-upload-pack-result"}

    async def answer(request: httpx.Request) -> httpx.Response:
        if kind == "500":
            return httpx.Response(500, text="Internal Server Error")
        if kind == "garbage":
            return httpx.Response(200, headers=result, content=b"<html>hello</html>")
        if kind == "truncated":  # a ref line, and no flush-pkt after it
            return httpx.Response(200, headers=result, content=pkt_line(f"{A} refs/heads/main\n"))
        if kind == "html":
            return httpx.Response(200, headers={"content-type": "text/html"}, content=b"0000")
        assert kind == "v0"
        headers = {k: v for k, v in request.headers.items() if k.lower() != "git-protocol"}
        async with httpx.AsyncClient(timeout=30) as real:
            answered = await real.post(str(request.url), content=request.content, headers=headers)
        type_ = {"content-type": answered.headers.get("content-type", "")}
        return httpx.Response(answered.status_code, headers=type_, content=answered.content)

    return answer


@pytest.mark.parametrize("kind", ["500", "garbage", "truncated", "html", "v0"])
def test_an_answer_that_is_not_a_v2_ls_refs_falls_back_to_the_fetch(
    sandbox: BackgroundSandbox, tmp_path: Path, kind: str
) -> None:
    url, token, origin = f"{sandbox.api_url}/{REPO}.git", _token(sandbox), _origin(sandbox)

    async def scenario(client: httpx.AsyncClient) -> None:
        transport = httpx.MockTransport(_answering(kind))
        async with httpx.AsyncClient(transport=transport) as odd:
            workspaces = Workspaces(tmp_path / "ws", refs_http=odd)
            mirror = await workspaces.refresh(REPO, url, token)
            _git(origin, "update-ref", "refs/heads/main", _commit(origin, "main"))
            mark = len(sandbox.sandbox.requests)
            await workspaces.refresh(REPO, url, token, since=time.monotonic())
            assert FETCHED in _git_requests(sandbox, mark)
            assert _refs(mirror) == _refs(origin)

    _run(scenario)


def test_a_ref_moved_on_github_after_the_last_fetch_is_in_the_next_session_s_clone(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    """The check's safety: a person pushed between two sessions; the next one starts
    at GitHub's head, not at the one Ballet last fetched or pushed."""
    url, token, origin = f"{sandbox.api_url}/{REPO}.git", _token(sandbox), _origin(sandbox)
    _git(origin, "branch", "ballet/2-y", "main")

    async def scenario(client: httpx.AsyncClient) -> None:
        workspaces = Workspaces(tmp_path / "ws", refs_http=client)
        await workspaces.refresh(REPO, url, token)
        await workspaces.refresh(REPO, url, token, since=time.monotonic())  # unmoved: looked
        for branch in ("ballet/2-y", "main"):
            moved = _commit(origin, branch)
            _git(origin, "update-ref", f"refs/heads/{branch}", moved)
            await workspaces.refresh(REPO, url, token, since=time.monotonic())
            made = await workspaces.create(REPO, key=f"s-{branch}", branch=branch, base="main")
            try:
                assert made.start_sha == moved
                assert _git(made.clone, "rev-parse", "HEAD") == moved
            finally:
                await workspaces.remove(made)

    _run(scenario)


def test_ls_refs_answers_are_read_strictly() -> None:
    def answer(*lines: str, end: bytes = b"0000") -> bytes:
        return b"".join(pkt_line(line) for line in lines) + end

    assert parse_ls_refs(b"0000") == {}
    assert parse_ls_refs(
        answer(
            f"{A} refs/heads/main\n",
            f"{B} refs/tags/v1 peeled:{A}\n",
            f"{A} refs/pull/1/head\n",  # a prefix not asked for: the server may send it
            f"{B} refs/heads/no-newline",
        )
    ) == {"refs/heads/main": A, "refs/tags/v1": B, "refs/heads/no-newline": B}
    assert parse_ls_refs(answer(f"{'c' * 64} refs/heads/sha256\n")) == {
        "refs/heads/sha256": "c" * 64
    }
    bad = [
        b"",  # nothing, as a v0 upload-pack answers a v2 request
        answer(f"{A} refs/heads/main\n", end=b""),  # no flush-pkt
        answer(f"{A} refs/heads/main\n", end=b"0000" + pkt_line("more\n")),
        answer(f"{A} refs/heads/main\n", end=b"00"),
        answer("ERR upload-pack: not our ref\n"),
        answer("version 2\n", "ls-refs\n"),  # a capability advertisement
        answer(f"{A.upper()} refs/heads/main\n"),
        answer(f"{A[:39]} refs/heads/main\n"),
        answer("unborn HEAD symref-target:refs/heads/main\n"),
        answer(f"{A} refs/heads/main\n", f"{B} refs/heads/main\n"),  # twice
        answer(f"{A} refs/heads/main\n", f"{B} refs/heads/x extra\n"),
        answer(f"{A} refs/heads/a b\n"),
        answer(f"{A}\n"),
        b"0001" + answer(f"{A} refs/heads/main\n"),  # a delim-pkt
        b"0003" + answer(f"{A} refs/heads/main\n"),
        b"00zz",
        pkt_line(f"{A} refs/heads/main\n")[:-3] + b"0000",  # a length past the body
    ]
    for body in bad:
        with pytest.raises(UnknownRefs):
            parse_ls_refs(body)


def test_the_refs_are_asked_while_the_mirror_is_held_by_the_last_push(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    # The last session's push going into the mirror holds its lock; GitHub has that
    # push already, so the next refresh asks GitHub's refs without waiting for it.
    url, token = f"{sandbox.api_url}/{REPO}.git", _token(sandbox)

    async def scenario(client: httpx.AsyncClient) -> None:
        workspaces = Workspaces(tmp_path / "ws", refs_http=client)
        mirror = await workspaces.refresh(REPO, url, token)
        _git_requests(sandbox, 0)  # the first refresh's requests all logged
        mark = len(sandbox.sandbox.requests)
        async with locked(mirror):
            refreshing = asyncio.create_task(
                workspaces.refresh(REPO, url, token, since=time.monotonic())
            )
            deadline = time.monotonic() + 10
            while not sandbox.sandbox.requests[mark:] and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert _git_requests(sandbox, mark) == LOOKED  # asked, the lock still held
            assert not refreshing.done()
        assert await refreshing == mirror
        assert _git_requests(sandbox, mark) == LOOKED  # and nothing fetched after it

    _run(scenario)
