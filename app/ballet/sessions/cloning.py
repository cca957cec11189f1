"""A session's clone of the mirror: how it is made, whether now or ahead of time.

`clone_branch` is the one way a session's clone comes to be: by `Workspaces.create`
as the session starts, and by the clones prepared ahead (prepared.py), which must
be exactly the clone a fresh one would be.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ballet.sessions.git import run_git
from ballet.sessions.mirror import all_refs, refs_by_name

# An agent's own `git push` fails with this message: Ballet pushes the ticket
# branch itself after the session, and nothing may write to the shared mirror.
NO_PUSH_URL = "/ballet-pushes-the-ticket-branch-after-the-session"


class WorkspaceError(Exception):
    """A workspace could not be prepared; the message says why and what to do."""


@dataclass(frozen=True)
class GitIdentity:
    name: str = "Ballet"
    email: str = "ballet@users.noreply.github.com"


@dataclass(frozen=True)
class Cloned:
    start_sha: str  # checked out
    branch: str
    existed: bool  # False: made from the base
    refs: str  # every ref of the mirror, which the clone copied (mirror.all_refs)
    base_sha: str = ""  # the base's head when it was made


async def clone_branch(
    mirror: Path,
    clone: Path,
    *,
    branch: str | None,
    base: str,
    repo: str,
    identity: GitIdentity,
    env: Mapping[str, str],
    shared: bool = True,
) -> Cloned:
    """A `--shared` clone of `mirror` at `clone`, `branch` checked out (made from `base`
    when it does not exist yet). Not `shared`: the clone holds copies of the objects
    it needs, borrowing none of the mirror's (a companion's clone: no lease, no bind)."""
    target = branch or base
    # The clone, the branch name's check and the reading of the mirror's refs are three
    # git processes of their own: run together, not one after the other. The heads are
    # read from the mirror (the clone's origin/* are copied from it) and the checkout
    # names the commit, so a fetch between the two changes nothing here; under the
    # mirror's lock (a clone prepared ahead), the refs read are those the clone copied.
    clone_command = run_git(
        "clone", "--quiet", "--shared" if shared else "--no-hardlinks", "--no-checkout",
        "-c", f"user.name={identity.name}",
        "-c", f"user.email={identity.email}",
        "-c", f"remote.origin.pushurl={NO_PUSH_URL}",
        str(mirror), str(clone),
        cwd=None, env=env,
    )  # fmt: skip
    cloned, valid, refs = await asyncio.gather(
        clone_command,
        run_git("check-ref-format", "--branch", target, cwd=mirror, env=env, check=False),
        all_refs(mirror, env),
        return_exceptions=True,
    )
    for outcome in (cloned, valid, refs):
        if isinstance(outcome, BaseException):
            raise outcome
    assert not isinstance(valid, BaseException) and not isinstance(refs, BaseException)
    if valid[0] != 0:
        raise WorkspaceError(f"{target!r} is not a valid branch name; fix the pipeline's `branch:`")
    heads = refs_by_name(refs)
    existed = f"refs/heads/{target}" in heads
    start = heads.get(f"refs/heads/{target if existed else base}")
    if start is None:
        raise WorkspaceError(
            f"neither {target!r} nor the base branch {base!r} exists in {repo}: "
            "set `base:` in the pipeline to an existing branch"
        )
    # Writing files is most of a workspace's cost: one checkout worker per core.
    # Measured with bench/workspace.py: where creating a file costs ~0.5 ms, two
    # workers cut a 2,000-file checkout from ~1.45 s to ~0.93 s; on tmpfs (~0.013 ms)
    # one worker would be ~5 ms faster. The slow disk is the case worth winning.
    await run_git(
        "-c", "checkout.workers=0",
        "checkout", "--quiet", "--no-track", "-B", target, start,
        cwd=clone, env=env,
    )  # fmt: skip
    return Cloned(start, target, existed, refs, heads.get(f"refs/heads/{base}", start))
