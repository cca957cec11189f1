"""Pushing a session's commits: the ticket branch only, never forced.

The push runs in the mirror, not in the clone: the clone's `.git/config` and
hooks are the agent's to write, and a process carrying the token must not
read either (an `insteadOf` or a pre-push hook would hand the token away).
The branch's commits are first fetched from the clone into a private ref of
the mirror; then the mirror pushes exactly `<sha>:refs/heads/<branch>`.
Other branches and tags the agent made are never pushed.
"""

from __future__ import annotations

from ballet.sessions.git import GitError, run_git
from ballet.sessions.git_auth import auth_environment
from ballet.sessions.workspace import Workspace, Workspaces


class PushError(Exception):
    """The ticket branch was not pushed; the message says why and what to do."""


async def push_ticket_branch(
    workspaces: Workspaces, workspace: Workspace, *, base: str, token: str | None
) -> str:
    """Push the clone's ticket branch if it moved; returns its head commit."""
    branch = workspace.branch
    if branch == base:
        raise PushError(
            f"refusing to push to the base branch {base!r}: Ballet pushes ticket branches only"
        )
    env = workspaces.git_env
    code, out, _ = await run_git(
        "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}",
        cwd=workspace.clone, env=env, check=False,
    )  # fmt: skip
    if code != 0:
        raise PushError(f"the session deleted its branch {branch!r}; nothing was pushed")
    sha = out.strip()
    if sha == workspace.start_sha:
        return sha
    private = f"refs/ballet/push/{workspace.key}"
    mirror = workspace.mirror
    try:
        await run_git(
            "fetch", "--quiet", "--no-tags",
            str(workspace.clone), f"+refs/heads/{branch}:{private}",
            cwd=mirror, env=env,
        )  # fmt: skip
        await run_git(
            "push", "--quiet", "--no-verify", "origin", f"{sha}:refs/heads/{branch}",
            cwd=mirror, env={**env, **auth_environment(token)},
        )  # fmt: skip
    except GitError as error:
        hint = (
            "the branch moved on GitHub during the session (someone else pushed); "
            "retry the stage so it starts from the new head"
            if "rejected" in error.stderr or "fetch first" in error.stderr
            else "check the App's permission to push to the repository"
        )
        raise PushError(f"{error}; {hint}") from error
    finally:
        await run_git("update-ref", "-d", private, cwd=mirror, env=env, check=False)
    return sha
