"""`phases.artefact_path`: a phase's handoff also written on the ticket's branch, by a
commit of Ballet's own on top of the session's, and removed by the stage's last phase
(`gc_on_close`): a real clone, real processes, a real push to a bare origin."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from ballet.core.report import Handoff
from ballet.sessions import SessionOptions, SessionResult, Workspaces
from ballet.sessions.spec import RunnerSpec
from git_repos import git
from session_helpers import MakeSpec, WriteScript, run

BRANCH = "ballet/7-greeting"
# Each phase lists what it finds of the handoffs in its clone, then hands over.
AGENT = """
import json, os, subprocess
phase = os.environ["BALLET_PHASE"]
where = ".ballet/handoffs"
found = sorted(os.listdir(where)) if os.path.isdir(where) else []
open({log!r} + "/" + phase + ".json", "w").write(json.dumps(found))
open("work-" + phase + ".txt", "w").write(phase)
subprocess.run(["git", "add", "."], check=True)
subprocess.run(["git", "commit", "-q", "-m", phase], check=True)
json.dump({{"summary": phase + " handed over", "constraints": ["keep " + phase]}},
          open(os.environ["BALLET_HANDOFF"], "w"))
json.dump({{"outcome": "done", "summary": phase}}, open(os.environ["BALLET_REPORT"], "w"))
"""

Session = Callable[[RunnerSpec], SessionResult]


@pytest.fixture
def session(workspaces: Workspaces, options: SessionOptions, parent_env: dict[str, str]) -> Session:
    return lambda spec: run(spec, workspaces, parent_env, options)


@pytest.fixture
def agent(write_script: WriteScript, observed: Path) -> None:
    write_script("agent", AGENT.format(log=str(observed)))


def on_branch(origin: Path, path: str) -> str | None:
    listed = git("ls-tree", "--name-only", BRANCH, "--", path, cwd=origin).strip()
    return git("show", f"{BRANCH}:{path}", cwd=origin) if listed else None


def test_each_phase_writes_its_handoff_on_the_branch_and_the_last_removes_them(
    make_spec: MakeSpec, session: Session, origin: Path, observed: Path, agent: None
) -> None:
    handoff: Handoff | None = None
    for phase in ("research", "plan", "implement"):
        spec = make_spec(
            phase=phase,
            handoff=handoff,
            artefact_path=".ballet/handoffs",
            last_phase=phase == "implement",
        )
        result = session(spec)
        assert result.failure_reason is None, result.report.summary
        handoff = result.handoff
        if phase == "research":
            written = on_branch(origin, ".ballet/handoffs/implement-research.json")
            assert written is not None
            assert json.loads(written)["constraints"] == ["keep research"]
            assert result.head_sha == git("rev-parse", BRANCH, cwd=origin).strip()
            message = git("log", "-1", "--format=%an %s", BRANCH, cwd=origin).strip()
            assert message == "Ballet Ballet: phase handoffs"
    seen = {p: json.loads((observed / f"{p}.json").read_text()) for p in ("plan", "implement")}
    assert seen["plan"] == ["implement-research.json"]
    assert seen["implement"] == ["implement-plan.json", "implement-research.json"]
    # The last phase removed them: the branch merges without them, its history keeps them.
    assert on_branch(origin, ".ballet/handoffs") is None
    assert on_branch(origin, "work-implement.txt") == "implement"
    history = git("log", "--format=%s", BRANCH, cwd=origin).split()
    assert history.count("implement") == 1 and "research" in history


def test_without_gc_the_handoffs_stay_on_the_branch(
    make_spec: MakeSpec, session: Session, origin: Path, agent: None
) -> None:
    spec = make_spec(
        phase="verify", artefact_path="notes/phases", gc_on_close=False, last_phase=True
    )
    result = session(spec)
    assert result.failure_reason is None, result.report.summary
    kept = on_branch(origin, "notes/phases/implement-verify.json")
    assert kept is not None and json.loads(kept)["summary"] == "verify handed over"


def test_without_an_artefact_path_nothing_but_the_work_is_pushed(
    make_spec: MakeSpec, session: Session, origin: Path, agent: None
) -> None:
    result = session(make_spec(phase="research"))
    assert result.failure_reason is None, result.report.summary
    assert on_branch(origin, ".ballet") is None
    assert git("log", "-1", "--format=%s", BRANCH, cwd=origin).strip() == "research"


# A hostile session: `.ballet` a symbolic link (committed) to a directory outside the
# clone, and hooks and config in the clone that would leave a mark if Ballet's git ran them.
HOSTILE = """
import json, os, subprocess
os.symlink({outside!r}, ".ballet")
subprocess.run(["git", "add", ".ballet"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "planted"], check=True)
mark = "touch " + {outside!r} + "/ran"
for hook in ("pre-commit", "post-commit", "post-index-change", "reference-transaction"):
    open(".git/hooks/" + hook, "w").write("#!/bin/sh\\n" + mark + "\\n")
    os.chmod(".git/hooks/" + hook, 0o755)
subprocess.run(["git", "config", "core.fsmonitor", mark], check=True)
json.dump({{"summary": "handed over"}}, open(os.environ["BALLET_HANDOFF"], "w"))
json.dump({{"outcome": "done", "summary": "planted"}}, open(os.environ["BALLET_REPORT"], "w"))
"""


def test_a_symlink_planted_at_the_artefact_path_is_replaced_not_followed(
    make_spec: MakeSpec, session: Session, write_script: WriteScript, origin: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "handoffs").mkdir(parents=True)
    write_script("agent", HOSTILE.format(outside=str(outside)))
    spec = make_spec(phase="research", artefact_path=".ballet/handoffs")
    result = session(spec)
    assert result.failure_reason is None, result.report.summary
    assert list(outside.rglob("*")) == [outside / "handoffs"]
    mode, _, _, path = git("ls-tree", "-r", BRANCH, "--", ".ballet", cwd=origin).split()
    assert (mode, path) == ("100644", ".ballet/handoffs/implement-research.json")
    written = on_branch(origin, ".ballet/handoffs/implement-research.json")
    assert written is not None and json.loads(written)["summary"] == "handed over"
