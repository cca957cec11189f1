"""What a worker enforces of each session's limits, and how it watches one session.

At start-up `plan_limits` finds what this machine lets the worker enforce —
memory, processes and CPU through a cgroup per session (cgroups.py), the disk
through a size-limited tmpfs per workspace (disk.py) — applies the defaults
where the operator set nothing, and refuses (LimitsUnavailable) a limit the
operator set that it cannot enforce. Per session, the process joins its cgroup
and takes its rlimits before it can fork (`limited_argv`: a shell that writes
its own pid into each `cgroup.procs`, sets the rlimits and execs bwrap), and a
`SessionLimiter` reads the kernel's counters while it runs, ends a session
that keeps pressing on a limit, and says afterwards which limit ended it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import structlog

from ballet.core.session_limits import GIB, LimitName, LimitValues
from ballet.sessions.confine.bwrap import SandboxUnavailable
from ballet.sessions.confine.cgroups import CgroupTree, Counters, SessionCgroup, prepare
from ballet.sessions.disk import DiskUse, disk_use

log = structlog.get_logger("ballet.sessions.confine")

DEFAULT_MEMORY = 4 * GIB
DEFAULT_DISK = 8 * GIB
DEFAULT_PROCESSES = 512
MAX_OPEN_FILES = 65_536
SAMPLE_SECONDS = 0.25
# A session is ended, not left to its timeout, when it keeps pressing on a limit: a
# build's burst of forks passes in moments, a fork bomb retries for ever; one OOM kill
# may be a test the agent can shrink, three are a session that will not stop.
PRESSURE_SECONDS = 5.0
OOM_KILLS_TO_END = 3
# A session out of time whose CPU quota held it back in this share of its periods
# ran out of CPU, not of work: its failure is `cpu`.
THROTTLED_SHARE = 0.5
REMOVE_SECONDS = 30.0
CGROUP_LIMITS: tuple[LimitName, ...] = ("memory", "processes", "cpus")
_CONTROLLER = {"memory": "memory", "processes": "pids", "cpus": "cpu"}
_VARIABLE = {
    "memory": "BALLET_SESSION_MAX_MEMORY",
    "disk": "BALLET_SESSION_MAX_DISK",
    "processes": "BALLET_SESSION_MAX_PROCESSES",
    "cpus": "BALLET_SESSION_MAX_CPUS",
}


class LimitsUnavailable(SandboxUnavailable):
    """The operator set a limit this worker cannot enforce; the message says what to do."""


@dataclass(frozen=True)
class LimitPlan:
    """This worker's limits per session (None: not enforced here) and how it enforces them."""

    values: LimitValues
    cgroups: CgroupTree | None = None
    workspace_disk: bool = False  # each workspace its own tmpfs; else only /tmp is limited
    warnings: tuple[str, ...] = ()

    def how(self, name: LimitName) -> str:
        if getattr(self.values, name) is None:
            return "not enforced"
        if name == "disk":
            if self.workspace_disk:
                return "a tmpfs per session (clone, HOME, /tmp)"
            return "/tmp only (bwrap --size) and RLIMIT_FSIZE per file"
        assert self.cgroups is not None
        return self.cgroups.describe(_CONTROLLER[name])

    def workspace_size(self, values: LimitValues) -> int | None:
        """The size of a session's own tmpfs workspace, where workspaces get one."""
        return values.disk if self.workspace_disk else None


def plan_limits(
    requested: LimitValues,
    *,
    slots: int = 1,
    cgroups: CgroupTree | None,
    can_mount: bool,
) -> LimitPlan:
    """What this worker enforces: what the operator set, else a default, of each limit
    its machine can enforce. LimitsUnavailable names a set one it cannot, and what to
    change; a default it cannot enforce is left out with a warning."""
    offered = cgroups.controllers if cgroups is not None else frozenset()
    cores = len(os.sched_getaffinity(0))
    defaults = LimitValues(
        memory=DEFAULT_MEMORY,
        disk=DEFAULT_DISK,
        processes=DEFAULT_PROCESSES,
        # A fair share of the machine: its cores among the sessions it runs at once.
        cpus=max(1.0, cores / max(1, slots)),
    )
    values, warnings, refused = LimitValues(), [], []
    for name in CGROUP_LIMITS:
        wanted = getattr(requested, name)
        if _CONTROLLER[name] in offered:
            values = replace(values, **{name: wanted or getattr(defaults, name)})
        elif wanted is not None:
            refused.append(name)
        else:
            warnings.append(
                f"{name}: not limited per session (no writable {_CONTROLLER[name]} cgroup)"
            )
    if can_mount:
        values = replace(values, disk=requested.disk or defaults.disk)
    elif requested.disk is not None:
        refused.append("disk")
    else:  # bwrap limits /tmp unprivileged; the clone and HOME only file by file
        values = replace(values, disk=defaults.disk)
        warnings.append(
            "disk: only /tmp and each file are limited"
            " (the worker may not mount a tmpfs per session)"
        )
    if refused:
        raise LimitsUnavailable(_refusal(refused))
    return LimitPlan(values, cgroups if offered else None, can_mount, tuple(warnings))


def _refusal(names: Sequence[str]) -> str:
    variables = ", ".join(_VARIABLE[n] for n in names)
    needs = []
    if any(n != "disk" for n in names):
        needs.append(
            "a writable cgroup for each (run the worker as root where cgroup v1 is mounted, "
            "or give it a delegated cgroup v2 subtree: systemd `Delegate=yes`, or a container "
            "with a writable cgroup namespace)"
        )
    if "disk" in names:
        needs.append("for the disk, the right to mount a tmpfs per session (root or CAP_SYS_ADMIN)")
    return (
        f"{variables} set, but this worker cannot enforce it: it needs {'; '.join(needs)}. "
        f"Change that, or unset {variables} (docs/security.md, Resource limits)"
    )


def prepare_cgroups(plan: LimitPlan) -> None:
    """Ready the cgroup hierarchies (v2 delegation, a dead worker's leftovers): once,
    at start-up, before any session. Raises LimitsUnavailable when it cannot."""
    if plan.cgroups is None:
        return
    try:
        prepare(plan.cgroups)
    except OSError as error:
        raise LimitsUnavailable(
            f"cannot prepare the cgroups for sessions ({error}); give the worker a "
            "delegated cgroup v2 subtree or a writable cgroup v1, or unset "
            "BALLET_SESSION_MAX_* (docs/security.md, Resource limits)"
        ) from error


# -- one session -------------------------------------------------------------------

# The shell a session starts as: it joins the session's cgroup (each file named before
# `--`: v1's `tasks` takes 0, itself; v2's `cgroup.procs` its pid), takes its rlimits
# and becomes bwrap, so nothing of the session ever runs outside them (a pid written
# after the start would race its first fork). PWD, which the shell exports, is not
# the session's to see.
_JOIN = (
    'while [ "$1" != -- ]; do case "$1" in */tasks) echo 0 > "$1";; *) echo $$ > "$1";; esac'
    " || exit 125; shift; done; shift; "
)


def limited_argv(argv: list[str], values: LimitValues, cgroup: SessionCgroup | None) -> list[str]:
    """`argv` run within `values`' rlimits and, when there is one, the session's cgroup.
    RLIMIT_NPROC is left alone: it counts every process of the user, the worker's and
    every other session's too. RLIMIT_FSIZE is in the shell's 512-byte blocks."""
    _, hard_files = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = (
        MAX_OPEN_FILES if hard_files == resource.RLIM_INFINITY else min(hard_files, MAX_OPEN_FILES)
    )
    # One limit per `ulimit` (dash takes no more); any failure stops the session.
    limits = [("c", 0), ("n", files)]
    if values.disk is not None:
        limits.append(("f", max(1, values.disk // 512)))
    setting = "".join(f"ulimit -{flag} {value} || exit 125; " for flag, value in limits)
    script = f'{setting}unset PWD; {_JOIN}exec "$@"'
    joins = [str(path) for path in cgroup.join_files] if cgroup else []
    return ["/bin/sh", "-c", script, "ballet-limits", *joins, "--", *argv]


@dataclass(frozen=True)
class LimitUsage:
    """What a session did against its limits, as the kernel counted it."""

    counters: Counters
    disk: DiskUse | None = None  # its workspace's filesystem at its fullest
    disk_full: bool = False  # that filesystem was full at some point
    ended_for: LimitName | None = None  # Ballet ended it for pressing on this limit


class SessionLimiter:
    """One session's cgroup and workspace disk, watched while the session runs."""

    def __init__(
        self, values: LimitValues, cgroup: SessionCgroup | None, disk_root: Path | None
    ) -> None:
        self.values = values
        self.cgroup = cgroup
        self._disk_root = disk_root
        self._fullest: DiskUse | None = None
        self._disk_full = False
        self._ended_for: LimitName | None = None
        self._watch: asyncio.Task[None] | None = None

    def spawned(self) -> None:
        if self.cgroup is not None or self._disk_root is not None:
            self._watch = asyncio.get_running_loop().create_task(self._watching())

    async def ended(self) -> None:
        """Stop watching, then end and remove the cgroup (its final counters kept)."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
            self._watch = None
        self._sample_disk()
        if self.cgroup is not None:
            await self.cgroup.remove(REMOVE_SECONDS)

    @property
    def usage(self) -> LimitUsage:
        counters = self.cgroup.counters() if self.cgroup else Counters()
        return LimitUsage(counters, self._fullest, self._disk_full, self._ended_for)

    def _sample_disk(self) -> None:
        use = disk_use(self._disk_root) if self._disk_root is not None else None
        if use is not None:
            self._disk_full = self._disk_full or use.full
            if self._fullest is None or use.used > self._fullest.used:
                self._fullest = use

    async def _watching(self) -> None:
        pressed_since: float | None = None
        refusals = 0
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(SAMPLE_SECONDS)
            self._sample_disk()
            if self.cgroup is None:
                continue
            counters = self.cgroup.counters()
            if counters.fork_refusals > refusals:
                pressed_since = pressed_since or loop.time()
            else:
                pressed_since = None
            refusals = counters.fork_refusals
            if counters.oom_kills >= OOM_KILLS_TO_END:
                self._end("memory", f"{counters.oom_kills} processes killed for memory")
                return
            if pressed_since is not None and loop.time() - pressed_since >= PRESSURE_SECONDS:
                self._end("processes", f"forks refused for {PRESSURE_SECONDS:g} s")
                return

    def _end(self, name: LimitName, why: str) -> None:
        log.warning("session ended for pressing on its limit", limit=name, why=why)
        self._ended_for = name
        assert self.cgroup is not None
        self.cgroup.kill()
