"""Which merge methods a repository allows, read when GitHub refuses a merge.

GitHub answers `405` both for a method the repository disallows and for a pull
request it will not merge yet (branch protection, a draft). Only the first is a
setting no rework can change, so it is told apart: by the repository's own
`allow_*` settings where the installation may read them, else by GitHub's words
("Squash merges are not allowed on this repository.").
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from ballet.github.forge import ForgeError, MergeMethod, NotFound
from ballet.github.issue_graph import Client

# The repository setting behind each method (GitHub's `full-repository`).
SETTING: dict[MergeMethod, str] = {
    "merge": "allow_merge_commit",
    "squash": "allow_squash_merge",
    "rebase": "allow_rebase_merge",
}
_REFUSED = re.compile(r"(merge commits|squash merges|rebase merges) are not allowed", re.I)


class MergeSettings(BaseModel):
    """The merge settings of `GET /repos/{owner}/{repo}`. GitHub sends them only to
    callers who may administer the repository, so each may be absent (None)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    allow_merge_commit: bool | None = None
    allow_squash_merge: bool | None = None
    allow_rebase_merge: bool | None = None
    delete_branch_on_merge: bool | None = None

    def allows(self, method: MergeMethod) -> bool | None:
        allowed: bool | None = getattr(self, SETTING[method])
        return allowed

    def allowed_methods(self) -> tuple[MergeMethod, ...] | None:
        """The methods the repository allows; None when the settings are not visible."""
        known = {m: self.allows(m) for m in SETTING}
        if any(v is None for v in known.values()):
            return None
        return tuple(m for m, v in known.items() if v)


def refused_method(method: MergeMethod, error: ForgeError, settings: MergeSettings) -> str | None:
    """What to tell a person when `error` (GitHub's answer to a merge with `method`)
    means the repository disallows the method; None when it means something else."""
    if error.status != 405:
        return None
    allowed = settings.allowed_methods()
    said = _REFUSED.search(str(error))
    if settings.allows(method) is True or (settings.allows(method) is None and said is None):
        return None
    detail = said.group(0) + " on this repository" if said else f"{method} is not allowed"
    if allowed is not None:
        names = ", ".join(allowed) or "none"
        detail += f"; it allows: {names}"
    return detail


class MergeStrategyCalls:
    """The merge strategy's calls of `GitHubForge` (kept here so the adapter's module
    stays short): what a 405 means, and deleting the merged branch."""

    _client: Client

    async def refused_method(self, repo: str, method: MergeMethod, exc: ForgeError) -> str | None:
        """`refused_method` with the repository's settings read (usually a 304)."""
        if exc.status != 405:
            return None
        settings = MergeSettings.model_validate(await self._client.json("GET", f"/repos/{repo}"))
        return refused_method(method, exc, settings)

    async def delete_branch(self, repo: str, branch: str) -> None:
        try:
            await self._client.call("DELETE", f"/repos/{repo}/git/refs/heads/{branch}")
        except NotFound:
            return
        except ForgeError as exc:
            # GitHub answers 422 "Reference does not exist" for a branch already gone
            # (a repository that deletes head branches on merge got there first).
            if exc.status != 422:
                raise
