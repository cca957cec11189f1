"""Branches for `GitHubForge`: reading a branch's head and starting a ticket's branch
(kept here so the adapter's module stays short)."""

from __future__ import annotations

from ballet.github import models as m
from ballet.github.forge import BranchHead, ForgeError, NotFound
from ballet.github.issue_graph import Client


class BranchCalls:
    _client: Client

    async def branch_sha(self, repo: str, branch: str) -> str | None:
        try:
            data = await self._client.json("GET", f"/repos/{repo}/git/ref/heads/{branch}")
        except NotFound:
            return None
        return m.GitRef.model_validate(data).object.sha

    async def branch_head(self, repo: str, branch: str) -> BranchHead | None:
        try:
            data = await self._client.json("GET", f"/repos/{repo}/branches/{branch}")
        except NotFound:
            return None
        found = m.Branch.model_validate(data).commit
        return BranchHead(sha=found.sha, tree=found.commit.tree.sha)

    async def create_branch(
        self,
        repo: str,
        branch: str,
        from_sha: str,
        *,
        seed_message: str | None = None,
        seed_tree: str | None = None,
    ) -> None:
        if seed_message is not None:
            from_sha = await self._empty_commit(repo, from_sha, seed_message, seed_tree)
        try:
            await self._client.call(
                "POST",
                f"/repos/{repo}/git/refs",
                json={"ref": f"refs/heads/{branch}", "sha": from_sha},
            )
        except ForgeError as exc:
            # A retried ticket start finds its branch already there: that is success.
            if exc.status != 422 or "already exists" not in str(exc):
                raise

    async def _empty_commit(self, repo: str, parent: str, message: str, tree: str | None) -> str:
        if tree is None:
            commit = m.GitCommit.model_validate(
                await self._client.json("GET", f"/repos/{repo}/git/commits/{parent}")
            )
            tree = commit.tree.sha
        created = await self._client.json(
            "POST",
            f"/repos/{repo}/git/commits",
            json={"message": message, "tree": tree, "parents": [parent]},
        )
        return m.GitCommit.model_validate(created).sha
