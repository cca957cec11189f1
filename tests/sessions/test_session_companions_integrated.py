"""An integrator's session brings every repository's branch up to date: told to rebase,
it rebases a companion's branch on the companion's moved base too, and Ballet pushes the
rewritten branch there, leased on the head the session started from, as the ticket's."""

from __future__ import annotations

from pathlib import Path

from ballet.core.config import Runtime
from ballet.sessions import SessionOptions, Workspaces
from ballet.sessions.prompt import render_prompt
from ballet.sessions.spec import CompanionInfo, StageInfo
from git_repos import git, make_origin, remote_refs
from session_helpers import MakeSpec, WriteScript, run

BRANCH = "ballet/7-greeting"
# Rebases each companion on its base as the integrator skill says (no conflicts here).
AGENT = """
import json, os, subprocess
for line in open(os.environ["BALLET_COMPANIONS"]).read().splitlines():
    repo, _, path = line.partition("=")
    subprocess.run(["git", "-C", path, "rebase", "-q", "origin/main"], check=True)
json.dump({"outcome": "done", "summary": "rebased"}, open(os.environ["BALLET_REPORT"], "w"))
"""


def _lib_behind_its_base(tmp_path: Path) -> tuple[Path, str, str]:
    """lib's ticket branch has a commit of its own; lib's main moved on since."""
    lib = make_origin(tmp_path / "lib", {"lib.py": "VALUE = 1\n"})
    work = tmp_path / "lib-work"
    git("clone", "-q", str(lib), str(work))
    git("checkout", "-q", "-b", BRANCH, cwd=work)
    (work / "ticket.py").write_text("USES = 1\n")
    git("add", "ticket.py", cwd=work)
    git("commit", "-qm", "lib: the ticket's change", cwd=work)
    git("push", "-q", "origin", BRANCH, cwd=work)
    git("checkout", "-q", "main", cwd=work)
    (work / "moved.py").write_text("MOVED = 1\n")
    git("add", "moved.py", cwd=work)
    git("commit", "-qm", "main moved", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    refs = remote_refs(lib)
    return lib, refs[f"refs/heads/{BRANCH}"], refs["refs/heads/main"]


def test_an_integrator_told_to_rebase_rewrites_a_companions_branch_and_it_is_pushed(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
) -> None:
    lib, before, main = _lib_behind_its_base(tmp_path)
    write_script("agent", AGENT)
    spec = make_spec(
        stage=StageInfo(id="integrate", skills=("integrator",)),
        runtime=Runtime(adapter="command", command=("agent",)),
        companions=(CompanionInfo(repo="octo/lib", clone_url=lib.as_uri(), base="main"),),
        update_with="rebase",
    )
    result = run(spec, workspaces, parent_env, options)

    assert result.failure_reason is None, result.report.summary
    after = remote_refs(lib)[f"refs/heads/{BRANCH}"]
    assert after != before and result.companion_heads == {"octo/lib": after}
    # The ticket's commit replayed on lib's moved main: not a descendant of the old head.
    assert git("rev-parse", f"{after}^", cwd=lib) == main
    assert git("show", f"{after}:ticket.py", cwd=lib) == "USES = 1"
    # The session was told to bring lib's branch up to date too.
    prompt = render_prompt(spec, report_path=Path("/r.json"), handoff_path=None)
    assert "rebase it on `origin/<base>`" in prompt
