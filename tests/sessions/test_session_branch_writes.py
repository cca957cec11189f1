"""A ticket's branch started, and the merged one deleted, by git pushes from the
worker's mirror (sessions/branch_writes.py), against the sandbox's git over HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from ballet.sessions import GitIdentity, Workspaces
from ballet.sessions.branch_writes import BranchWriteError, MirrorBranches
from ballet.sessions.mirror import mirror_heads

REPO = "octo/demo"
BRANCH = "ballet/3-fix-it"
USER = "sandbox-user:octo"
BOT = GitIdentity("ballet-app[bot]", "ballet-app[bot]@users.noreply.github.com")


def _api(sandbox: BackgroundSandbox, path: str) -> httpx.Response:
    headers = {"Authorization": f"token {USER}"}
    return httpx.get(f"{sandbox.api_url}/repos/{REPO}{path}", headers=headers, timeout=30)


def _head(sandbox: BackgroundSandbox, branch: str) -> str | None:
    found = _api(sandbox, f"/git/ref/heads/{branch}")
    return None if found.status_code == 404 else str(found.json()["object"]["sha"])


def test_a_ticket_branch_starts_with_the_bot_s_empty_commit_once(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    url = f"{sandbox.api_url}/{REPO}.git"
    base = _api(sandbox, "/branches/main").json()["commit"]

    async def scenario() -> None:
        branches = MirrorBranches(Workspaces(tmp_path / "ws"), BOT)
        await branches.start_branch(
            REPO, url=url, token=USER, branch=BRANCH, base="main", message="Start it (#3)"
        )
        sha = _head(sandbox, BRANCH)
        assert sha is not None
        commit = _api(sandbox, f"/git/commits/{sha}").json()
        assert [p["sha"] for p in commit["parents"]] == [base["sha"]]
        assert commit["tree"]["sha"] == base["commit"]["tree"]["sha"]  # empty: the base's tree
        assert commit["message"].strip() == "Start it (#3)"
        for who in (commit["author"], commit["committer"]):
            assert (who["name"], who["email"]) == (BOT.name, BOT.email)
        # A retry (the effect's job ran again after a crash) finds the branch: no second
        # commit, from this worker's mirror or from another worker's fresh one.
        await branches.start_branch(
            REPO, url=url, token=USER, branch=BRANCH, base="main", message="Start it (#3)"
        )
        other = MirrorBranches(Workspaces(tmp_path / "other"), BOT)
        await other.start_branch(
            REPO, url=url, token=USER, branch=BRANCH, base="main", message="Start it (#3)"
        )
        assert _head(sandbox, BRANCH) == sha
        # The mirror has it too: the ticket's first session fetches nothing new.
        mirror = branches.workspaces.mirror_path(REPO)
        assert (mirror / "refs" / "heads" / BRANCH).read_text().strip() == sha or sha in (
            (mirror / "packed-refs").read_text() if (mirror / "packed-refs").exists() else ""
        )

    asyncio.run(scenario())


def test_a_missing_base_is_named_and_nothing_is_pushed(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    url = f"{sandbox.api_url}/{REPO}.git"

    async def scenario() -> None:
        branches = MirrorBranches(Workspaces(tmp_path / "ws"), BOT)
        with pytest.raises(BranchWriteError) as raised:
            await branches.start_branch(
                REPO, url=url, token=USER, branch=BRANCH, base="trunk", message="Start"
            )
        assert raised.value.missing and not raised.value.transient
        assert "trunk" in str(raised.value)

    asyncio.run(scenario())
    assert _head(sandbox, BRANCH) is None


def test_a_refused_push_is_not_taken_for_success(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    url = f"{sandbox.api_url}/{REPO}.git"

    async def scenario() -> None:
        branches = MirrorBranches(Workspaces(tmp_path / "ws"), BOT)
        with pytest.raises(BranchWriteError) as raised:
            await branches.start_branch(
                REPO, url=url, token="not-a-token", branch=BRANCH, base="main", message="Start"
            )
        assert not raised.value.missing

    asyncio.run(scenario())
    assert _head(sandbox, BRANCH) is None


def test_the_merged_branch_is_deleted_and_one_already_gone_is_success(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    url = f"{sandbox.api_url}/{REPO}.git"

    async def scenario() -> None:
        branches = MirrorBranches(Workspaces(tmp_path / "ws"), BOT)
        await branches.start_branch(
            REPO, url=url, token=USER, branch=BRANCH, base="main", message="Start"
        )
        assert _head(sandbox, BRANCH) is not None
        await branches.delete_branch(REPO, url=url, token=USER, branch=BRANCH)
        assert _head(sandbox, BRANCH) is None
        await branches.delete_branch(REPO, url=url, token=USER, branch=BRANCH)
        # From a worker that never fetched the repository, too.
        other = MirrorBranches(Workspaces(tmp_path / "other"), BOT)
        await other.delete_branch(REPO, url=url, token=USER, branch=BRANCH)
        mirror = branches.workspaces.mirror_path(REPO)
        assert not (mirror / "refs" / "heads" / BRANCH).exists()

    asyncio.run(scenario())


class RacingWorkspaces(Workspaces):
    """Real workspaces whose first fetch is followed, at once, by another worker
    starting the same branch: it appears on GitHub after this mirror's fetch."""

    def __init__(self, root: Path, rival: MirrorBranches, url: str) -> None:
        super().__init__(root)
        self.rival, self.url, self.raced = rival, url, False

    async def refresh(
        self, repo: str, clone_url: str, token: str | None, *, since: float | None = None
    ) -> Path:
        mirror = await super().refresh(repo, clone_url, token, since=since)
        if not self.raced:
            self.raced = True
            await self.rival.start_branch(
                REPO, url=self.url, token=USER, branch=BRANCH, base="main", message="Theirs"
            )
        return mirror


def test_a_branch_made_meanwhile_is_kept_and_fetched_into_the_mirror(
    sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    url = f"{sandbox.api_url}/{REPO}.git"

    async def scenario() -> None:
        rival = MirrorBranches(Workspaces(tmp_path / "rival"), BOT)
        racing = RacingWorkspaces(tmp_path / "ws", rival, url)
        await MirrorBranches(racing, BOT).start_branch(
            REPO, url=url, token=USER, branch=BRANCH, base="main", message="Mine"
        )
        sha = _head(sandbox, BRANCH)
        assert sha is not None and racing.raced
        assert _api(sandbox, f"/git/commits/{sha}").json()["message"].strip() == "Theirs"
        # The first session may take this start's fetch as its own: the branch is there.
        heads = await mirror_heads(racing.mirror_path(REPO), (BRANCH,), racing.git_env)
        assert heads[BRANCH] == sha

    asyncio.run(scenario())
