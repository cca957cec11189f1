"""A phase's handoff written on the ticket's branch (`.ballet.yml` `phases.artefact_path`).

No git command runs in the clone after a session (push.py says why): the commit that
writes or removes the handoff files is made with plumbing in the mirror, on top of the
session's commit, its objects written to the clone's own object store (checked by
push.py) with the mirror's as alternates, so the mirror other sessions share gets none
of them before GitHub has taken the push.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ballet.core.config import PHASE_ORDER
from ballet.core.report import Handoff
from ballet.sessions.cloning import GitIdentity
from ballet.sessions.git import run_git
from ballet.sessions.spec import RunnerSpec


def phase_artefacts(spec: RunnerSpec, handoff: Handoff | None) -> dict[str, bytes | None]:
    """The handoff files a phase writes on the branch, when `artefact_path` is set."""
    if spec.phase is None or spec.artefact_path is None:
        return {}
    return artefact_files(
        spec.artefact_path, spec.stage.id, spec.phase, handoff, spec.last_phase, spec.gc_on_close
    )


def artefact_files(
    directory: str, stage: str, phase: str, handoff: Handoff | None, last: bool, gc: bool
) -> dict[str, bytes | None]:
    """The files to write (bytes) or remove (None): this phase's handoff; after the
    stage's last phase with `gc`, every phase's handoff of the stage removed instead."""
    if last and gc:
        return {f"{directory}/{stage}-{p}.json": None for p in PHASE_ORDER}
    if handoff is None:
        return {}
    text = json.dumps(handoff.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    return {f"{directory}/{stage}-{phase}.json": text.encode()}


async def commit_files(
    mirror: Path,
    objects: Path,
    sha: str,
    files: Mapping[str, bytes | None],
    *,
    message: str,
    identity: GitIdentity,
    env: Mapping[str, str],
) -> str:
    """A commit on `sha` with `files` written or removed; `sha` itself when that changes
    nothing. `objects` is the clone's checked object store, where new objects go."""
    who = {
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
    }
    fd, index = tempfile.mkstemp(prefix="ballet-artefacts-", suffix=".index")
    os.close(fd)
    os.unlink(index)  # git makes it: an empty file is not an index
    git_env = {
        **env,
        **who,
        "GIT_INDEX_FILE": index,
        "GIT_OBJECT_DIRECTORY": str(objects),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(mirror / "objects"),
    }
    try:
        await run_git("read-tree", sha, cwd=mirror, env=git_env)
        entries = []
        for path, data in files.items():
            if data is None:  # mode 0 takes the path out of the index
                entries.append(f"0 {'0' * len(sha)}\t{path}\n")
                continue
            _, blob, _ = await run_git(
                "hash-object", "-w", "--stdin", cwd=mirror, env=git_env, stdin=data
            )
            entries.append(f"100644 {blob.strip()}\t{path}\n")
        # --index-info: `--force-remove` wants a work tree, which a mirror has none of.
        await run_git(
            "update-index", "--index-info", cwd=mirror, env=git_env,
            stdin="".join(entries).encode(),
        )  # fmt: skip
        _, tree, _ = await run_git("write-tree", cwd=mirror, env=git_env)
        _, old_tree, _ = await run_git("rev-parse", f"{sha}^{{tree}}", cwd=mirror, env=git_env)
        if tree.strip() == old_tree.strip():
            return sha
        _, commit, _ = await run_git(
            "commit-tree", tree.strip(), "-p", sha, "-m", message, cwd=mirror, env=git_env
        )
        return commit.strip()
    finally:
        Path(index).unlink(missing_ok=True)
