"""Ending a sandbox for certain: its init killed from outside, and waited for.

The worker runs `bwrap`, which starts the sandbox's init (pid 1 of its pid
namespace) and exits when that init says the agent has exited. Neither is
proof that the sandbox is gone: the init runs as the agent's own user, so an
agent able to reach into it (ptrace, /proc/1/mem) can have it say "exited"
while the agent's processes go on, and can clear the death signal that kills
it with the worker. Anything still running then races Ballet reading the
clone after the session (its branch, its objects, see `push.py`).

So bwrap tells the worker its init's pid (`--info-fd`) the moment it starts
it, before the agent runs; the worker holds a pidfd on it at once, while the
outer bwrap (its parent) is alive so the pid cannot have been reused; and
when the session's process ends, by itself or killed, the worker SIGKILLs the
init through the pidfd and waits for it to be gone. An init's death takes
every process of its namespace with it, and the kernel lets the init finish
dying only once they are all gone: after `end()` nothing of the session runs.
Where the session has a cgroup of its own (limits.py), that is removed after
the init's end, killing first anything still in it (the outer bwrap, say):
the two agree that nothing of the session is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path

import structlog

log = structlog.get_logger("ballet.sessions.confine")

# How long the init may take to die once killed (the kernel reaps the namespace).
END_SECONDS = 30.0


class SandboxNotEnded(RuntimeError):
    """Processes of a session's sandbox could not be ended; the session must not go on."""


class SandboxInit:
    """The sandbox's init, from bwrap's `--info-fd` to its certain end."""

    def __init__(self) -> None:
        self._read, self.write_fd = os.pipe()
        os.set_blocking(self._read, False)
        self._buffer = b""
        self._pidfd: int | None = None
        self._namespace: int | None = None
        self._parsed = False  # bwrap's info read whole (pidfd taken or not)
        self._reading = False
        self._spawned = False

    def spawned(self) -> None:
        """bwrap holds the write end now: ours goes (EOF once bwrap's goes), and the
        pid is taken the moment bwrap writes it."""
        os.close(self.write_fd)
        self.write_fd = -1
        self._spawned = True
        asyncio.get_running_loop().add_reader(self._read, self._readable)
        self._reading = True

    def _readable(self) -> None:
        try:
            chunk = os.read(self._read, 4096)
        except BlockingIOError:
            return
        self._buffer += chunk
        if not self._parsed:
            self._take_pid()
        if not chunk or self._parsed:
            self._stop_reading()

    def _take_pid(self) -> None:
        try:
            info = json.loads(self._buffer)
        except ValueError:
            return  # not all of it yet
        self._parsed = True
        pid = info.get("child-pid") if isinstance(info, dict) else None
        if not isinstance(pid, int):
            return
        namespace = info.get("pid-namespace")
        self._namespace = namespace if isinstance(namespace, int) else None
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return  # gone already, and with it its namespace
        except OSError as error:  # out of descriptors, say: end() falls back
            log.error("no pidfd on the sandbox's init", pid=pid, error=str(error))
            return
        if not _is_namespace_init(pid, namespace):
            os.close(pidfd)
            log.error("bwrap's init pid is not a namespace's init", pid=pid)
            return
        self._pidfd = pidfd

    def _stop_reading(self) -> None:
        if self._reading:
            asyncio.get_running_loop().remove_reader(self._read)
            self._reading = False

    async def end(self) -> None:
        """Kill the init, if it runs, and return once it (and so the sandbox) is gone;
        SandboxNotEnded if that cannot be made sure of. Idempotent; before `spawned()`
        it only releases the pipe. (No info from bwrap: it never started a sandbox.)"""
        if not self._spawned:
            self.close()
            return
        if self._reading:
            self._readable()  # what bwrap wrote before exiting
            self._stop_reading()
        self.close()
        pidfd, self._pidfd = self._pidfd, None
        namespace, self._namespace = self._namespace, None
        if pidfd is not None:
            try:
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                if await _exited(pidfd, END_SECONDS):
                    return
            finally:
                os.close(pidfd)
        if namespace is not None:
            # No hold on the init, or it would not die: every process of the namespace.
            log.warning("ending a sandbox by its pid namespace", namespace=namespace)
            await _kill_namespace(namespace, END_SECONDS)

    def close(self) -> None:
        """Release the pipe, each end once: a descriptor closed twice may by then be
        another thread's (the sandbox's git, in tests), and closing it breaks that."""
        read, self._read = self._read, -1
        write, self.write_fd = self.write_fd, -1
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)


async def _exited(pidfd: int, timeout: float) -> bool:
    """Whether the process exited within `timeout` (a pidfd reads as ready once it has)."""
    loop = asyncio.get_running_loop()
    gone = asyncio.Event()
    loop.add_reader(pidfd, gone.set)
    try:
        await asyncio.wait_for(gone.wait(), timeout)
        return True
    except TimeoutError:
        log.error("a killed sandbox's init did not exit", seconds=timeout)
        return False
    finally:
        loop.remove_reader(pidfd)


async def _kill_namespace(namespace: int, timeout: float) -> None:
    """SIGKILL every process of the pid namespace until none is left."""
    deadline = asyncio.get_running_loop().time() + timeout
    while members := _members(namespace):
        if asyncio.get_running_loop().time() > deadline:
            raise SandboxNotEnded(
                f"{len(members)} processes of a session's sandbox outlived it; "
                "nothing of the session was pushed"
            )
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.01)


def _members(namespace: int) -> list[int]:
    """The live (not zombie) processes whose pid namespace has this inode."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry.name}/ns/pid").st_ino != namespace:
                continue
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2] not in "ZX":
            found.append(int(entry.name))
    return found


def _is_namespace_init(pid: int, namespace: object) -> bool:
    """Whether `pid` is pid 1 (its NSpid ends in 1) of the pid namespace bwrap named."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        inode = os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return False
    if isinstance(namespace, int) and inode != namespace:
        return False
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            ids = line.split()[1:]
            return len(ids) >= 2 and ids[-1] == "1"
    return False
