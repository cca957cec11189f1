"""Hostile sessions against their resource limits, each beside a second ticket's session
on the same worker: a fork bomb, an allocation of twice the memory limit, filling /tmp,
HOME and the clone, eight busy threads. Real bwrap sessions, real cgroups and a real
tmpfs per workspace, with small limits so each runs in seconds.

The hostile session ends with its limit as its failure reason (read from the kernel's
counters), its report saying which limit, its value and what to do; the neighbour
reports and its commit is pushed; nothing of either is left: no workspace, no mount,
no cgroup.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ballet.core.config import Runtime
from ballet.core.session_limits import MIB, Limits, LimitValues
from ballet.sessions import (
    SessionOptions,
    SessionResult,
    TicketInfo,
    Workspaces,
    anonymous,
    run_session,
)
from ballet.sessions.confine import Isolation
from ballet.sessions.confine.cgroups import PREFIX, detect
from ballet.sessions.confine.limits import LimitsUnavailable, plan_limits
from ballet.sessions.disk import can_mount
from git_repos import git, remote_refs
from session_helpers import MakeSpec, WriteScript
from session_logs import RecordingSink

SMALL = LimitValues(memory=64 * MIB, disk=32 * MIB, processes=64, cpus=1.0)

NEIGHBOUR = """
import json, os, subprocess, time
time.sleep(1.5)
open("work.txt", "w").write(os.environ["BALLET_TICKET"])
subprocess.run(["git", "add", "work.txt"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "Work"], check=True)
json.dump({"outcome": "done", "summary": "ok"}, open(os.environ["BALLET_REPORT"], "w"))
"""
FORK_BOMB = """
import os, time
while True:
    try:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
    except OSError:
        time.sleep(0.001)
"""
TWICE_THE_MEMORY = """
held = b"x" * (128 * 1024 * 1024)
print("allocated", len(held))
"""
FILL = """
import os, sys
place = {"tmp": "/tmp", "home": os.environ["HOME"], "clone": "."}[sys.argv[1]]
with open(os.path.join(place, "filler"), "wb") as out:
    while True:
        out.write(b"x" * (1024 * 1024))
        out.flush()
"""
BUSY_THREADS = """
import hashlib, threading
data = b"x" * (1 << 20)
def spin():
    while True:
        hashlib.sha256(data).digest()  # releases the GIL: eight threads, eight cores' worth
for _ in range(8):
    threading.Thread(target=spin, daemon=True).start()
threading.Event().wait()
"""


def limited(values: LimitValues) -> SessionOptions:
    try:
        plan = plan_limits(values, cgroups=detect(), can_mount=can_mount())
    except LimitsUnavailable as error:
        pytest.skip(f"this machine cannot enforce the limits: {error}")
    return SessionOptions(grace_seconds=0.5, isolation=Isolation(limits=plan))


def beside_a_neighbour(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    hostile: str,
    *,
    argv: tuple[str, ...] = ("hostile",),
    timeout: float = 30,
) -> tuple[SessionResult, SessionResult, float]:
    """The hostile session (ticket 7) and a neighbour (ticket 8) at once, on one worker."""
    write_script("hostile", hostile)
    write_script("neighbour", NEIGHBOUR)
    first = make_spec(timeout_seconds=timeout)
    first = first.model_copy(update={"runtime": first.runtime.model_copy(update={"command": argv})})
    second = make_spec(
        ticket=TicketInfo(**{**first.ticket.model_dump(), "number": 8}),
        branch="ballet/8-other",
    )
    second = second.model_copy(
        update={"runtime": second.runtime.model_copy(update={"command": ("neighbour",)})}
    )

    async def both() -> tuple[SessionResult, SessionResult, float]:
        started = time.monotonic()
        results = await asyncio.gather(
            *(
                run_session(
                    spec,
                    workspaces=workspaces,
                    git_auth=anonymous,
                    parent_env=parent_env,
                    options=options,
                )
                for spec in (first, second)
            )
        )
        return results[0], results[1], time.monotonic() - started

    return asyncio.run(both())


def assert_neighbour_done(result: SessionResult, origin: Path) -> None:
    assert result.failure_reason is None, result.report.summary
    assert result.report.outcome == "done"
    pushed = remote_refs(origin)["refs/heads/ballet/8-other"]
    assert git("show", f"{pushed}:work.txt", cwd=origin) == "octo/demo#8"


def assert_nothing_left(workspaces: Workspaces) -> None:
    assert not list((workspaces.root / "sessions").iterdir())
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(workspaces.root) not in mounts
    tree = detect()
    assert tree is not None
    for hierarchy in tree.hierarchies:
        left = [p.name for p in hierarchy.base.glob(f"{PREFIX}{os.getpid()}-*")]
        assert not left, f"cgroups left in {hierarchy.base}: {left}"


def test_a_fork_bomb_ends_at_its_process_limit_and_its_neighbour_merges(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    hostile, neighbour, took = beside_a_neighbour(
        make_spec, write_script, workspaces, parent_env, limited(SMALL), FORK_BOMB
    )
    assert hostile.failure_reason == "processes", hostile.report.summary
    summary = hostile.report.summary
    assert "more than 64 processes" in summary and "BALLET_SESSION_MAX_PROCESSES" in summary
    assert "Ballet ended the session" in summary
    assert took < 25  # ended for pressing on its limit, not left to its 30 s timeout
    assert_neighbour_done(neighbour, origin)
    assert_nothing_left(workspaces)


def test_twice_the_memory_ends_at_its_memory_limit_and_its_neighbour_merges(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    hostile, neighbour, _ = beside_a_neighbour(
        make_spec, write_script, workspaces, parent_env, limited(SMALL), TWICE_THE_MEMORY
    )
    assert hostile.failure_reason == "memory", hostile.report.summary
    summary = hostile.report.summary
    assert "memory limit of 64 MiB" in summary and "BALLET_SESSION_MAX_MEMORY" in summary
    assert "allocated" not in hostile.output_tail  # the kernel killed it first
    assert_neighbour_done(neighbour, origin)
    assert_nothing_left(workspaces)


@pytest.mark.parametrize("place", ["tmp", "home", "clone"])
def test_filling_its_disk_ends_at_its_disk_limit_and_its_neighbour_merges(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    origin: Path,
    place: str,
) -> None:
    hostile, neighbour, _ = beside_a_neighbour(
        make_spec,
        write_script,
        workspaces,
        parent_env,
        limited(SMALL),
        FILL,
        argv=("hostile", place),
    )
    assert hostile.failure_reason == "disk", hostile.report.summary
    summary = hostile.report.summary
    assert "clone, HOME and /tmp together" in summary and "32 MiB" in summary
    assert "No space left on device" in hostile.output_tail
    assert_neighbour_done(neighbour, origin)
    assert_nothing_left(workspaces)


def test_eight_busy_threads_are_held_to_their_cpu_limit_and_its_neighbour_merges(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    options = limited(LimitValues(memory=256 * MIB, disk=32 * MIB, processes=64, cpus=0.1))
    hostile, neighbour, _ = beside_a_neighbour(
        make_spec, write_script, workspaces, parent_env, options, BUSY_THREADS, timeout=4
    )
    assert hostile.failure_reason == "cpu", hostile.report.summary
    summary = hostile.report.summary
    assert "CPU limit of 0.1 cores" in summary and "throttled in" in summary
    assert "BALLET_SESSION_MAX_CPUS" in summary and "timeout_minutes" in summary
    assert_neighbour_done(neighbour, origin)
    assert_nothing_left(workspaces)


def test_a_file_asking_more_than_the_deployment_runs_at_the_deployments_and_says_so(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
) -> None:
    write_script("agent", NEIGHBOUR.replace("time.sleep(1.5)", ""))
    spec = make_spec(
        runtime=Runtime(
            adapter="command",
            command=("agent",),
            limits=Limits(memory="8GiB", processes=32),
        )
    )
    sink = RecordingSink()
    result = asyncio.run(
        run_session(
            spec,
            workspaces=workspaces,
            git_auth=anonymous,
            parent_env=parent_env,
            options=limited(SMALL),
            log_sink=sink,
        )
    )
    assert result.failure_reason is None, result.report.summary
    note = "`limits: memory: 8GiB` in .ballet.yml is above this deployment's 64 MiB"
    assert note in result.report.details  # and so in its report comment
    log = sink.everything()
    assert note in log
    assert "limits: memory 64 MiB (cgroup v" in log and "processes 32 (cgroup v" in log
    assert "disk 32 MiB (a tmpfs per session (clone, HOME, /tmp))" in log
    assert_nothing_left(workspaces)


def test_a_disk_a_dead_worker_left_mounted_goes_with_the_next_workspace(
    workspaces: Workspaces, origin: Path
) -> None:
    if not can_mount():
        pytest.skip("this machine cannot mount a tmpfs per session")
    # A worker killed mid-session (an OOM kill of the worker itself) leaves its mount.
    left = workspaces.root / "sessions" / "killed-session"
    left.mkdir(parents=True)
    leave = f"from ballet.sessions.disk import mount_limited; mount_limited({str(left)!r}, 1 << 20)"
    subprocess.run([sys.executable, "-c", leave], check=True)
    (left / "secret-of-the-dead-session").write_text("x")
    assert os.path.ismount(left)

    async def next_session() -> None:
        await workspaces.refresh("octo/demo", origin.as_uri(), None)
        made = await workspaces.create("octo/demo", key="k", branch=None, base="main", disk=MIB * 8)
        await workspaces.remove(made)

    asyncio.run(next_session())
    assert not left.exists() and not os.path.ismount(left)
    assert_nothing_left(workspaces)
