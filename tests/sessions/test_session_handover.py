"""One session to the next of the same ticket, made the fast way: the mirror fetched
ahead of the session (its own refresh then skipped as fresh) and the workspace
opened while the session job reads the ticket (`open_workspace`, `prepared=`).
A hostile first session tries to leave something the next one, or Ballet's git,
would trust; the next session gets a fresh clone of the pushed commit and
nothing else. Real bubblewrap, real git, real processes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from ballet.sessions import (
    RunnerSpec,
    SessionOptions,
    SessionResult,
    StageInfo,
    Workspaces,
    anonymous,
    open_workspace,
    run_session,
)
from ballet.sessions.workspace import WorkspaceError
from git_repos import remote_refs
from session_helpers import COMMIT_AND_REPORT, MakeSpec, WriteScript, run

# Tries every way into what the next session is made from; notes what it managed.
PLANT = (
    """
import json, os, pathlib, subprocess
done = {}
def attempt(name, action):
    try:
        action()
        done[name] = "written"
    except Exception as error:
        done[name] = type(error).__name__
mirror_objects = next(
    line.strip() for line in open(".git/objects/info/alternates") if line.strip()
)
mirror = pathlib.Path(mirror_objects).parent
root = mirror.parent.parent.parent
attempt("mirror object", lambda: open(f"{mirror_objects}/planted", "w").write("x"))
attempt("mirror ref", lambda: open(mirror / "refs/heads/main", "w").write("0" * 40 + "\\n"))
attempt("mirror config", lambda: open(mirror / "config", "a").write("[core]\\n\\thooksPath=/x\\n"))
attempt("mirror hook", lambda: open(mirror / "hooks/post-update", "w").write("#!/bin/sh\\n"))
def incoming():  # where Ballet receives a push's pack before moving it in
    os.makedirs(mirror / "ballet-incoming" / "planted", exist_ok=True)
    open(mirror / "ballet-incoming" / "planted" / "pack-planted.pack", "w").write("x")
attempt("mirror incoming", incoming)
attempt("next session", lambda: os.makedirs(root / "sessions" / "planted"))
attempt("own clone", lambda: open(".git/hooks/post-checkout", "w").write("#!/bin/sh\\n"))
subprocess.run(["git", "config", "core.hooksPath", ".git/hooks"], check=True)
json.dump(done, open(os.environ["PLANTED"], "w"))
"""
    + COMMIT_AND_REPORT
)

# The next session: what its clone starts from and carries.
LOOK = """
import json, os, subprocess
def git(*a): return subprocess.run(["git", *a], capture_output=True, text=True).stdout.strip()
seen = {
    "head": git("rev-parse", "HEAD"),
    "hooks_path": git("config", "--get", "core.hooksPath"),
    "hooks": sorted(n for n in os.listdir(".git/hooks") if not n.endswith(".sample")),
    "home": sorted(os.listdir(os.environ["HOME"])),
}
json.dump(seen, open(os.environ["SEEN"], "w"))
json.dump({"outcome": "approve", "summary": "looked"}, open(os.environ["BALLET_REPORT"], "w"))
"""


def _next_session(
    spec: RunnerSpec,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    origin: Path,
) -> SessionResult:
    """The next session as the worker runs it after a prefetch: the mirror fetched
    just now, the workspace opened (refresh skipped as fresh) before the session.
    The origin is gone once the prefetch is done: a second fetch would fail."""

    async def go() -> SessionResult:
        launched = time.monotonic()
        await workspaces.refresh(spec.ticket.repo, spec.clone_url, None)  # the prefetch
        origin.rename(origin.with_name("away"))
        prepared = asyncio.ensure_future(
            open_workspace(
                workspaces,
                repo=spec.ticket.repo,
                clone_url=spec.clone_url,
                token=None,
                key=f"{spec.ticket.ref}:{spec.stage.id}:1:1",
                branch=spec.branch,
                base=spec.base,
                fresh_since=launched,
            )
        )
        return await run_session(
            spec,
            workspaces=workspaces,
            git_auth=anonymous,
            parent_env=parent_env,
            options=options,
            prepared=prepared,
        )

    try:
        return asyncio.run(go())
    finally:
        origin.with_name("away").rename(origin)


def test_a_session_leaves_nothing_the_next_one_made_ahead_trusts(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    origin: Path,
    observed: Path,
) -> None:
    planted, seen = observed / "planted.json", observed / "seen.json"
    write_script("plant", PLANT)
    write_script("look", LOOK)
    env = {**parent_env, "PLANTED": str(planted), "SEEN": str(seen)}
    first = make_spec(
        runtime=make_spec().runtime.model_copy(update={"command": ("plant",), "env": ("PLANTED",)})
    )
    hostile = run(first, workspaces, env, options)
    assert hostile.failure_reason is None, hostile.report.summary
    tried = json.loads(planted.read_text())
    # It ran, and the mirror's objects were read-only to it; the rest of the mirror and
    # the other sessions are not there at all (what it wrote went to its own sandbox,
    # checked from outside below).
    assert tried["own clone"] == "written" and tried["mirror object"] != "written", tried
    main_before = remote_refs(origin)["refs/heads/main"]

    review = make_spec(
        stage=StageInfo(id="review", skills=("reviewer",)),
        runtime=make_spec().runtime.model_copy(update={"command": ("look",), "env": ("SEEN",)}),
    )
    result = _next_session(review, workspaces, env, options, origin)
    assert result.failure_reason is None, result.report.summary
    looked = json.loads(seen.read_text())
    assert looked["head"] == hostile.head_sha  # the pushed commit, from the fresh mirror
    assert looked["hooks_path"] == "" and looked["hooks"] == [] and looked["home"] == []
    mirror = workspaces.mirror_path("octo/demo")
    assert not (mirror / "objects" / "planted").exists()
    # Where the mirror receives a push's pack: what the session wrote there stayed in
    # its own sandbox (the mirror's directory is not in its view).
    assert not list(mirror.rglob("pack-planted.pack"))
    assert "hooksPath" not in (mirror / "config").read_text()
    assert not (workspaces.root / "sessions" / "planted").exists()
    assert remote_refs(origin)["refs/heads/main"] == main_before


def test_a_fetch_from_before_the_launch_is_not_taken_as_fresh(
    workspaces: Workspaces, origin: Path
) -> None:
    async def go() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        launched = time.monotonic()  # launched after that fetch: it must fetch again
        origin.rename(origin.with_name("away"))
        try:
            await workspaces.refresh("octo/demo", origin.as_uri(), None, since=launched)
        finally:
            origin.with_name("away").rename(origin)

    with pytest.raises(WorkspaceError, match="could not fetch"):
        asyncio.run(go())
