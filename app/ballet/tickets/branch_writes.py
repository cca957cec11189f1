"""The interpreter's seam for the branch writes git does instead of REST.

A ticket's branch (with its seed commit) and the merged branch's deletion are
pushes from the worker's mirror (`sessions.branch_writes.MirrorBranches`); the
interpreter runs no git itself and is only given a `BranchWriter`. Without one
(a process that keeps no mirror) it writes them through the REST API as before.
Git's failures become the forge's, so the ticket service treats them alike: one
GitHub could not answer is tried again later, a refusal fails the effect.
"""

from __future__ import annotations

from typing import Protocol

from ballet.github.forge import Forge, ForgeError, ForgeUnavailable, NotFound
from ballet.sessions.branch_writes import BranchWriteError


class BranchWriter(Protocol):
    async def start_branch(
        self, repo: str, *, url: str, token: str | None, branch: str, base: str, message: str
    ) -> None: ...

    async def delete_branch(
        self, repo: str, *, url: str, token: str | None, branch: str
    ) -> None: ...


async def start_branch(
    forge: Forge, writer: BranchWriter, repo: str, *, branch: str, base: str, message: str
) -> None:
    remote = await forge.git_remote(repo)
    try:
        await writer.start_branch(
            repo, url=remote.url, token=remote.token, branch=branch, base=base, message=message
        )
    except BranchWriteError as exc:
        raise _forge_error(exc) from exc


async def delete_branch(forge: Forge, writer: BranchWriter, repo: str, branch: str) -> None:
    remote = await forge.git_remote(repo)
    try:
        await writer.delete_branch(repo, url=remote.url, token=remote.token, branch=branch)
    except BranchWriteError as exc:
        raise _forge_error(exc) from exc


def _forge_error(exc: BranchWriteError) -> ForgeError:
    if exc.transient:
        return ForgeUnavailable(str(exc))
    if exc.missing:
        return NotFound(str(exc), status=404)
    return ForgeError(str(exc))
