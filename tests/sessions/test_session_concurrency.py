"""Sessions side by side, a branch that moved meanwhile, and a cancelled session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from ballet.sessions import (
    SessionOptions,
    SessionResult,
    StageInfo,
    TicketInfo,
    Workspaces,
    anonymous,
    run_session,
)
from git_repos import git, remote_refs
from process_namespaces import namespace_alive, namespace_ends, record_namespace
from session_helpers import MakeSpec, WriteScript

COMMIT_AND_REPORT = """
import json, os, subprocess
open("work.txt", "w").write(os.environ["BALLET_TICKET"])
subprocess.run(["git", "add", "work.txt"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "Work"], check=True)
json.dump({"outcome": "done", "summary": "ok"}, open(os.environ["BALLET_REPORT"], "w"))
"""


def test_two_sessions_on_one_repository_at_once(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    write_script("agent", COMMIT_AND_REPORT)
    first = make_spec()
    second_ticket = TicketInfo(**{**first.ticket.model_dump(), "number": 8})
    second = make_spec(ticket=second_ticket, branch="ballet/8-other")

    async def both() -> list[SessionResult]:
        return list(
            await asyncio.gather(
                *(
                    run_session(s, workspaces=workspaces, git_auth=anonymous, parent_env=parent_env)
                    for s in (first, second)
                )
            )
        )

    results = asyncio.run(both())
    assert [r.failure_reason for r in results] == [None, None]
    refs = remote_refs(origin)
    assert git("show", f"{refs['refs/heads/ballet/7-greeting']}:work.txt", cwd=origin) == (
        "octo/demo#7"
    )
    assert git("show", f"{refs['refs/heads/ballet/8-other']}:work.txt", cwd=origin) == (
        "octo/demo#8"
    )
    assert not list((workspaces.root / "sessions").iterdir())


def test_a_branch_that_moved_during_the_session_is_not_overwritten(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    origin: Path,
    observed: Path,
    tmp_path: Path,
) -> None:
    # While the agent works, a person pushes to the ticket branch.
    person = tmp_path / "person"
    git("clone", "-q", origin.as_uri(), str(person))
    (person / "theirs.txt").write_text("theirs\n")
    git("add", "theirs.txt", cwd=person)
    git("commit", "-q", "-m", "theirs", cwd=person)
    ready, pushed = observed / "ready", observed / "pushed"
    write_script(
        "agent",
        "import os, time\n"
        f"open({str(ready)!r}, 'w').close()\n"
        f"while not os.path.exists({str(pushed)!r}): time.sleep(0.02)\n" + COMMIT_AND_REPORT,
    )

    async def scenario() -> SessionResult:
        task = asyncio.create_task(
            run_session(
                make_spec(), workspaces=workspaces, git_auth=anonymous,
                parent_env=parent_env, options=options,
            )
        )  # fmt: skip
        while not ready.exists():
            await asyncio.sleep(0.02)
        await asyncio.to_thread(
            git, "push", "-q", "origin", "HEAD:refs/heads/ballet/7-greeting", cwd=person
        )
        pushed.touch()
        return await task

    result = asyncio.run(scenario())
    assert result.failure_reason == "push"
    assert "retry the stage" in result.report.summary
    theirs = git("rev-parse", "HEAD", cwd=person)
    assert remote_refs(origin)["refs/heads/ballet/7-greeting"] == theirs


def test_a_cancelled_session_leaves_no_process_and_no_workspace(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    observed: Path,
) -> None:
    namespace = observed / "namespace"
    write_script(
        "agent",
        "import subprocess, time\n"
        "subprocess.Popen(['sleep', '300'])\n"
        "subprocess.Popen(['setsid', 'sleep', '300'])\n"
        + record_namespace(namespace)
        + "time.sleep(300)\n",
    )

    async def scenario() -> None:
        task = asyncio.create_task(
            run_session(
                make_spec(stage=StageInfo(id="review")),
                workspaces=workspaces,
                git_auth=anonymous,
                parent_env=parent_env,
                options=options,
            )
        )
        while not namespace.exists():
            await asyncio.sleep(0.01)
        assert namespace_alive(namespace.read_text())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert namespace_ends(namespace.read_text())
    assert not list((workspaces.root / "sessions").iterdir())
    mirror = workspaces.mirror_path("octo/demo")
    assert not list((mirror / "ballet-leases").iterdir())
