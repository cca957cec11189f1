"""Run one session process: its own process group, bounded output, timeout.

The process starts in a new session (so it leads its own process group); when
it ends, or its time is up, the whole group gets SIGTERM, a grace period, then
SIGKILL, so children an agent spawned (servers, watchers) never outlive it.

Python 3.11's `Process.wait()` only returns once every pipe is closed, which a
grandchild holding stdout can delay forever; a `SubprocessProtocol` tells us
the moment the process itself exits, and hands us its output chunk by chunk
so nothing but the bounded captures is kept. With a `SessionLog`, each chunk
also goes to it (redacted, capped, streamed: sessionlog/capture.py), and its
line split feeds `on_stdout_line` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import structlog

from ballet.sessionlog.capture import SessionLog
from ballet.sessions.capture import BoundedCapture, LineSplitter

log = structlog.get_logger(__name__)

# After the group is killed, how long to wait for the pipes to close; a process
# that escaped the group (setsid) and holds them open is then left behind.
PIPE_DRAIN_SECONDS = 5.0
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class ProcessOutcome:
    exit_code: int | None  # negative: killed by that signal
    timed_out: bool
    stdout: BoundedCapture
    stderr: BoundedCapture
    duration_seconds: float

    def output_tail(self, limit: int) -> str:
        """The end of stdout and stderr, labelled, at most about `limit` characters each."""
        parts = []
        for name, capture in (("stdout", self.stdout), ("stderr", self.stderr)):
            if capture.total_bytes:
                parts.append(f"--- {name} ({capture.total_bytes} bytes) ---\n")
                parts.append(capture.tail_text(limit))
        return "".join(parts)


class Supervisor(Protocol):
    """What watches a process beyond its group (a sandbox's init, see confine/reaper.py):
    descriptors the process inherits, told when it has started and when it has ended."""

    @property
    def pass_fds(self) -> tuple[int, ...]: ...

    def spawned(self) -> None: ...

    async def ended(self) -> None: ...


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(
        self, on_stdout_line: Callable[[bytes], None] | None, log: SessionLog | None
    ) -> None:
        self.stdout = BoundedCapture()
        self.stderr = BoundedCapture()
        self._on_line = on_stdout_line
        self._log = log
        self._lines = LineSplitter(on_stdout_line) if on_stdout_line and not log else None
        self.exited = asyncio.Event()
        self.closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        # Synchronous, in the event loop: the log only queues what its sink gets.
        if fd == 1:
            self.stdout.feed(data)
            if self._log:
                self._log.feed("stdout", data, self._on_line)
            elif self._lines:
                self._lines.feed(data)
        else:
            self.stderr.feed(data)
            if self._log:
                self._log.feed("stderr", data)

    def process_exited(self) -> None:
        self.exited.set()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lines:
            self._lines.close()
        if self._log:
            self._log.end_of_output()
        self.closed.set()


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_seconds: float,
    on_stdout_line: Callable[[bytes], None] | None = None,
    grace_seconds: float = 5.0,
    supervisor: Supervisor | None = None,
    log: SessionLog | None = None,
) -> ProcessOutcome:
    """Run `argv` to completion or timeout. Raises OSError when it cannot start.
    With a `supervisor`, it is told at once when the process has started, and its
    `ended()` is awaited once the group is gone, before this returns. With a `log`,
    the output also goes to it as it arrives."""
    loop = asyncio.get_running_loop()
    protocol = _Protocol(on_stdout_line, log)
    started = loop.time()
    transport, _ = await loop.subprocess_exec(
        lambda: protocol,
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        pass_fds=supervisor.pass_fds if supervisor else (),
    )
    if supervisor is not None:
        supervisor.spawned()
    pgid = transport.get_pid()
    timed_out = False
    try:
        try:
            await asyncio.wait_for(protocol.exited.wait(), timeout_seconds)
        except TimeoutError:
            timed_out = True
        await end_group(pgid, grace_seconds)
        await protocol.exited.wait()
        if supervisor is not None:
            await supervisor.ended()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(protocol.closed.wait(), PIPE_DRAIN_SECONDS)
    finally:
        # Cancelled (e.g. the job was aborted): no grace, nothing may survive.
        _signal_group(pgid, signal.SIGKILL)
        if supervisor is not None:
            await supervisor.ended()
        transport.close()
    return ProcessOutcome(
        exit_code=transport.get_returncode(),
        timed_out=timed_out,
        stdout=protocol.stdout,
        stderr=protocol.stderr,
        duration_seconds=loop.time() - started,
    )


async def end_group(pgid: int, grace_seconds: float) -> None:
    """SIGTERM every live process of the group, wait up to the grace, then SIGKILL."""
    if not group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    deadline = asyncio.get_running_loop().time() + grace_seconds
    while group_alive(pgid) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(POLL_SECONDS)
    if group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (zombies don't count: they are dead
    and merely unreaped, which an init that never reaps leaves them forever)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        # No process at all, zombie or not, is in the group: the usual end of a session,
        # answered without reading every process's stat (3+ ms on a busy machine).
        return False
    except PermissionError:
        pass  # someone else's process took the group's number: look closer
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
