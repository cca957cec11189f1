"""Ballet's own writes to a repository's branches, by git from the worker's mirror.

A ticket's branch starts with an empty commit on its base (GitHub opens no pull
request for a branch without commits of its own) and, once merged, is deleted.
Through the REST API that was a read of the base branch, a commit, a ref and, at
the end, a ref's deletion: four requests, three of them writes that count against
GitHub's secondary limits. Here each is one `git push` from the mirror:

- the start fetches the mirror (which also warms it for the ticket's first
  session), writes the seed commit there with `git commit-tree` (the base's tree,
  the base as its parent, the App's bot as author and committer) and pushes it to
  `refs/heads/<branch>` only if that ref does not exist on GitHub
  (`--force-with-lease=<ref>:`). A branch the fetch finds, or the push finds
  there after all (a start retried after a crash), is success: no second one;
- the deletion is `git push --delete`; a branch already gone is success.

The token reaches git through the environment of the one process (git_auth), as
for a session's push; no session ever runs in the mirror.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ballet.sessions.git import GitError, run_git
from ballet.sessions.git_auth import auth_environment
from ballet.sessions.mirror import locked, mirror_heads
from ballet.sessions.workspace import GitIdentity, WorkspaceError, Workspaces

# What git prints when it could not reach the server or the server failed (5xx):
# worth another try later, unlike a refusal (403, a protected branch).
_TRANSIENT = re.compile(
    r"returned error: 5\d\d|Could not resolve|Failed to connect|Connection (refused|reset"
    r"|timed out)|timed out|RPC failed|early EOF|unexpected disconnect",
    re.IGNORECASE,
)
_GONE = re.compile(r"remote ref does not exist|unable to delete", re.IGNORECASE)
_EXISTS = re.compile(r"stale info|fetch first|already exists", re.IGNORECASE)


class BranchWriteError(Exception):
    """A branch could not be written. `transient`: GitHub could not be reached or
    failed, so a later try may succeed; `missing`: the base branch does not exist."""

    def __init__(self, message: str, *, transient: bool = False, missing: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.missing = missing


@dataclass(frozen=True)
class MirrorBranches:
    """The seam the effect interpreter is given for branch writes (tickets/branch_writes.py)."""

    workspaces: Workspaces
    identity: GitIdentity  # the App's bot: author and committer of the seed commit

    async def start_branch(
        self, repo: str, *, url: str, token: str | None, branch: str, base: str, message: str
    ) -> None:
        """`branch` on GitHub: an empty commit on `base`'s head, unless it exists."""
        workspaces = self.workspaces
        try:
            mirror = await workspaces.refresh(repo, url, token)
        except WorkspaceError as error:
            raise BranchWriteError(str(error), transient=_transient(str(error))) from error
        env = workspaces.git_env
        async with locked(mirror):
            heads = await mirror_heads(mirror, (branch, base), env)
            if branch in heads:
                return  # made by an earlier try of this start (or by a person): kept
            if base not in heads:
                raise BranchWriteError(
                    f"the base branch {base!r} does not exist in {repo}", missing=True
                )
            ident = self.identity
            who = {
                "GIT_AUTHOR_NAME": ident.name,
                "GIT_AUTHOR_EMAIL": ident.email,
                "GIT_COMMITTER_NAME": ident.name,
                "GIT_COMMITTER_EMAIL": ident.email,
            }
            _, out, _ = await run_git(
                "commit-tree", f"{heads[base]}^{{tree}}", "-p", heads[base], "-m", message,
                cwd=mirror, env={**env, **who},
            )  # fmt: skip
            sha = out.strip()
            ref = f"refs/heads/{branch}"
            try:
                await run_git(
                    "push", "--quiet", "--no-verify", f"--force-with-lease={ref}:", url,
                    f"{sha}:{ref}", cwd=mirror, env=auth_environment(env, token),
                )  # fmt: skip
            except GitError as error:
                if not _EXISTS.search(error.stderr):
                    raise _failed(f"could not create {branch!r} in {repo}", error) from error
            else:
                # GitHub has it now, and so does the mirror: the first session's fetch
                # of the ticket finds its branch there already.
                await run_git("update-ref", ref, sha, "", cwd=mirror, env=env)
                return
        # It appeared since the fetch (a concurrent try): there it is. Fetched into the
        # mirror too: the first session may take this start's fetch as its own
        # (jobs/prefetch.py).
        await workspaces.refresh(repo, url, token)

    async def delete_branch(self, repo: str, *, url: str, token: str | None, branch: str) -> None:
        """`branch` gone from GitHub (and the mirror); one already gone is success."""
        workspaces = self.workspaces
        mirror = workspaces.mirror_path(repo)
        if not (mirror / "HEAD").exists():
            # A worker that never fetched this repository: a mirror to push from first.
            try:
                mirror = await workspaces.refresh(repo, url, token)
            except WorkspaceError as error:
                raise BranchWriteError(str(error), transient=_transient(str(error))) from error
        env = workspaces.git_env
        ref = f"refs/heads/{branch}"
        try:
            await run_git(
                "push", "--quiet", "--no-verify", url, f":{ref}",
                cwd=mirror, env=auth_environment(env, token),
            )  # fmt: skip
        except GitError as error:
            if not _GONE.search(error.stderr):
                raise _failed(f"could not delete {branch!r} in {repo}", error) from error
        async with locked(mirror):
            await run_git("update-ref", "-d", ref, cwd=mirror, env=env, check=False)


def _transient(text: str) -> bool:
    return bool(_TRANSIENT.search(text))


def _failed(what: str, error: GitError) -> BranchWriteError:
    return BranchWriteError(f"{what}: {error.stderr.strip()}", transient=_transient(error.stderr))
