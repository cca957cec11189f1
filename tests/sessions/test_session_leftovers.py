"""Nothing of a workspace or a prepared clone outlives it on the worker's machine,
however it ends: its own disk (a tmpfs outlives the process that mounted it and
keeps its directory busy), its directory and its lease.

Each test fails without the safety it names: a claim cancelled while it waited
for the mirror's lock lost its clone; a clone cancelled while being made (the
loop's end) kept its disk; a removal waiting for a thread of a busy pool, then
cancelled, never unmounted; a worker killed outright left its sessions' disks
mounted until a session of the same kind came along.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ballet.sessions import Workspaces
from ballet.sessions.cloning import Cloned
from ballet.sessions.disk import can_mount
from ballet.sessions.mounts import mounts
from mirror_locks import held, until_waiting

REPO = "octo/demo"
BRANCH = "ballet/7-x"
DISK = 8 << 20
# asyncio's default thread pool, as concurrent.futures documents its size.
POOL = min(32, (os.cpu_count() or 1) + 4)


def needs_mount(disk: int | None = DISK) -> None:
    if disk is not None and not can_mount():
        pytest.skip("this machine cannot mount a session's disk (needs root)")


def assert_nothing_left(root: Path) -> None:
    assert not [m.point for m in mounts() if m.point.is_relative_to(root)]
    assert not [p for p in (root / "sessions").glob("*")]
    assert not [p for p in (root / "prepared").glob("*/*")]
    leases = root / "mirrors" / "octo" / "demo.git" / "ballet-leases"
    assert not [p.name for p in leases.glob("*")]


@pytest.mark.parametrize("disk", [None, DISK], ids=["directory", "own-disk"])
def test_a_prepared_clone_whose_claim_is_cancelled_is_removed(
    tmp_path: Path, origin: Path, disk: int | None
) -> None:
    # The next session takes the clone out of those ready, then waits for the mirror's
    # lock (another session's fetch holds it) to compare its refs, and is cancelled
    # there (`/ballet cancel`, or the worker stopping): the clone is no longer among
    # those the worker's stop removes, so the claim must remove it itself.
    needs_mount(disk)
    root = tmp_path / "ws"

    async def scenario() -> None:
        workspaces = Workspaces(root)
        await workspaces.refresh(REPO, origin.as_uri(), None)
        workspaces.prepare(REPO, branch=BRANCH, base="main", disk=disk)
        await workspaces.prepared.made()
        mirror = workspaces.mirror_path(REPO)
        with held(mirror):
            claim = asyncio.create_task(
                workspaces.prepared.claim(mirror, f"{BRANCH}\nmain", workspaces.git_env, disk)
            )
            await until_waiting(mirror)
            claim.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await claim
        await workspaces.aclose()  # the worker stops

    asyncio.run(scenario())
    assert_nothing_left(root)


def test_a_clone_still_being_made_when_the_loop_ends_leaves_no_disk(
    tmp_path: Path, origin: Path
) -> None:
    # The loop's end cancels every task left (asyncio.run, as `ballet worker` runs):
    # a clone being made when nothing closed the Workspaces is cancelled midway,
    # on the disk mounted for it, which must go all the same.
    needs_mount()
    root = tmp_path / "ws"

    async def scenario() -> None:
        workspaces = Workspaces(root)
        await workspaces.refresh(REPO, origin.as_uri(), None)
        cloning = asyncio.Event()

        async def large_clone(_mirror: Path, _clone: Path) -> Cloned:
            cloning.set()
            await asyncio.Event().wait()  # a large repository's checkout, still going
            raise AssertionError("never cloned")

        mirror = workspaces.mirror_path(REPO)
        key, name = f"{BRANCH}\nmain", "octo_demo_ballet_7-x"
        workspaces.prepared.start(mirror, key, name, large_clone, workspaces.git_env, DISK)
        await cloning.wait()
        assert [p for p in workspaces.prepared.root.iterdir() if os.path.ismount(p)]

    asyncio.run(scenario())
    assert_nothing_left(root)


def test_a_disk_goes_at_once_though_every_thread_of_the_pool_is_busy(
    tmp_path: Path, origin: Path
) -> None:
    # Sessions of a busy repository wait for its mirror's lock (a long fetch), each on
    # a thread of the event loop's pool, all of them. A workspace removed now, and
    # cancelled as its worker stops, could not wait for a thread to unmount its disk.
    needs_mount()
    root = tmp_path / "ws"

    async def scenario() -> None:
        workspaces = Workspaces(root)
        await workspaces.refresh(REPO, origin.as_uri(), None)
        made = await workspaces.create(REPO, key="s1", branch=None, base="main", disk=DISK)
        mirror = workspaces.mirror_path(REPO)
        with held(mirror):
            fetches = [
                asyncio.create_task(workspaces.refresh(REPO, origin.as_uri(), None))
                for _ in range(POOL + 1)
            ]
            await until_waiting(mirror, POOL)
            removal = asyncio.create_task(workspaces.remove(made))
            await asyncio.sleep(0)  # it begins
            removal.cancel()
            await asyncio.sleep(0)
            assert not os.path.ismount(made.root)
        await asyncio.gather(*fetches)
        with contextlib.suppress(asyncio.CancelledError):
            await removal
        assert not made.root.exists()

    asyncio.run(scenario())
    assert_nothing_left(root)


KILLED_WORKER = """
import asyncio, sys
from pathlib import Path
from ballet.sessions import Workspaces

async def main() -> None:
    workspaces = Workspaces(Path(sys.argv[1]))
    await workspaces.refresh("octo/demo", sys.argv[2], None)
    await workspaces.create("octo/demo", key="s1", branch=None, base="main", disk=8 << 20)
    workspaces.prepare("octo/demo", branch="main", base="main", disk=8 << 20)
    await workspaces.prepared.made()
    print("running", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def test_a_worker_starting_removes_the_disks_a_killed_worker_left(
    tmp_path: Path, origin: Path
) -> None:
    # SIGKILLed (or the OOM killer) mid-session, nothing of a worker runs to unmount
    # its session's disk or its prepared clone's: the next worker on the same
    # workspaces removes both as it starts, before any session of its own.
    needs_mount()
    root = tmp_path / "ws"
    worker = subprocess.Popen(
        [sys.executable, "-c", KILLED_WORKER, str(root), origin.as_uri()],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline() == "running\n"
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    left = [m.point for m in mounts() if m.point.is_relative_to(root)]
    assert len(left) == 2, left  # the session's disk and the prepared clone's

    Workspaces(root)

    assert not [m.point for m in mounts() if m.point.is_relative_to(root)]
    assert not list((root / "sessions").iterdir())
    assert not (root / "prepared" / str(worker.pid)).exists()
