"""A session's companions: the ticket's other repositories (`.ballet.yml` `companions:`).

Each is cloned beside the ticket's clone, under `<workspace>/companions/<owner>/<name>`,
on the ticket's branch (made from the companion's default branch when the branch
does not exist there yet), and listed for the agent in `BALLET_COMPANIONS`, a file
of `owner/name=path` lines (docs/session-contract.md). The clone borrows nothing of
its mirror (`--no-hardlinks`: its own copies of the objects), so the sandbox binds
only the `companions` directory, writable, and no mirror of the companion is
leased or shown to the session. It lies inside the workspace, so it counts in the
session's disk and goes with the workspace.

After the session, each companion whose branch moved is pushed as the ticket's
clone is (push.py: never forced, secrets searched first, nothing the session wrote
run); `companion_heads` names every companion whose ticket branch then has commits
of its own, for the engine to open (or keep) its pull request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ballet.sessionlog.redact import Redactor
from ballet.sessions.cloning import clone_branch
from ballet.sessions.git_auth import GitAuth
from ballet.sessions.leftovers import to_the_end
from ballet.sessions.mirror import locked
from ballet.sessions.push import PushError, SecretInPush, push_ticket_branch
from ballet.sessions.redaction import GIT_TOKEN
from ballet.sessions.spec import CompanionInfo, RunnerSpec
from ballet.sessions.workspace import Workspace, Workspaces

COMPANIONS_FILE = "companions"  # in the BALLET_* directory


@dataclass(frozen=True)
class CompanionClone:
    info: CompanionInfo
    workspace: Workspace  # its clone, as push.py reads one
    base_sha: str  # the companion's base head when the clone was made
    # An integrator told to rebase may rebase the companion's branch on its base too:
    # its push is then leased on the head the session started from, as the ticket's.
    rewrite: bool = False


def companions_root(workspace: Workspace) -> Path:
    return workspace.root / "companions"


async def open_companions(
    workspaces: Workspaces,
    workspace: Workspace,
    spec: RunnerSpec,
    git_auth: GitAuth,
) -> tuple[CompanionClone, ...]:
    """A fresh clone of each companion in `workspace`, on the ticket's branch (a
    pipeline without one: the companion's base)."""
    made: list[CompanionClone] = []
    branch = spec.branch
    for info in spec.companions:
        token = await git_auth(info.repo)
        mirror = await workspaces.refresh(info.repo, info.clone_url, token)
        owner, _, name = info.repo.partition("/")
        clone = companions_root(workspace) / owner / name
        clone.parent.mkdir(parents=True, exist_ok=True)
        # Under the mirror's lock: no fetch or gc changes the packs being copied.
        async with locked(mirror):
            cloned = await clone_branch(
                mirror, clone, branch=branch, base=info.base, repo=info.repo,
                identity=workspaces.identity, env=workspaces.git_env, shared=False,
            )  # fmt: skip
        # Its own Workspace for push.py: the clone is its root (the giving of its
        # pushed commits to the mirror is awaited here, not by the workspace's removal).
        own = Workspace(
            workspace.key, clone, clone, workspace.home, workspace.files, mirror,
            mirror / "ballet-leases" / "none", cloned.branch, cloned.start_sha, cloned.existed,
        )  # fmt: skip
        made.append(CompanionClone(info, own, cloned.base_sha, spec.update_with == "rebase"))
    return tuple(made)


def write_companions_file(files: Path, clones: tuple[CompanionClone, ...]) -> Path:
    """`owner/name=path` a line, in landing order: what BALLET_COMPANIONS names."""
    path = files / COMPANIONS_FILE
    path.write_text("".join(f"{c.info.repo}={c.workspace.clone}\n" for c in clones))
    return path


def companions_context(clones: tuple[CompanionClone, ...]) -> list[dict[str, object]]:
    """BALLET_CONTEXT's `companions`."""
    return [
        {
            "repo": c.info.repo,
            "path": str(c.workspace.clone),
            "branch": c.workspace.branch,
            "base": c.info.base,
            "pr_number": c.info.pr_number,
        }
        for c in clones
    ]


async def push_companions(
    workspaces: Workspaces,
    clones: tuple[CompanionClone, ...],
    git_auth: GitAuth,
    redactor: Redactor,
) -> tuple[dict[str, str], Redactor]:
    """Push each companion whose branch moved; the heads of those with commits of
    their own. A PushError names the repository; what was pushed before it stays."""
    heads: dict[str, str] = {}
    for clone in clones:
        workspace, repo = clone.workspace, clone.info.repo
        token = await git_auth(repo)
        if token:
            redactor = redactor.adding({GIT_TOKEN: token})
        try:
            still_made_here(workspace.clone)
            head = await push_ticket_branch(
                workspaces, workspace, url=clone.info.clone_url, base=clone.info.base,
                token=token, redactor=redactor, rewrite=clone.rewrite,
            )  # fmt: skip
        except PushError as error:
            raise type(error)(*_named(error, repo)) from error
        finally:
            giving = workspaces.giving.pop(workspace.root, None)
            if giving is not None:
                await to_the_end(giving)
        if head != clone.base_sha:
            heads[repo] = head
    return heads, redactor


def still_made_here(clone: Path) -> None:
    """The companion's clone is still the directory Ballet made for it. Everything
    under `companions/` was the session's to write: it may have put a symbolic link
    where the clone, or its owner's directory, was, and the push (outside the
    sandbox) would read, and change, whatever repository of the worker it names."""
    root = clone.parent.parent  # <workspace>/companions, of .../companions/<owner>/<name>
    for path in (clone, clone.parent, root):
        if path.is_symlink() or not path.is_dir():
            raise PushError(
                f"the session replaced {path.relative_to(root.parent)} with something else "
                "than the clone Ballet made; nothing of it was pushed"
            )


def _named(error: PushError, repo: str) -> tuple[object, ...]:
    if isinstance(error, SecretInPush):
        return (error.variable, f"{error.where} (in {repo})")
    return (f"{repo}: {error}",)
