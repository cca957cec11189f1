"""A cgroup per session, under the worker's own, with limits the kernel enforces.

Where the worker may make cgroups:
- **cgroup v2 with a delegated subtree** (systemd `Delegate=yes`, a container with
  a writable cgroup namespace): the worker's own cgroup (`0::/path` in
  /proc/self/cgroup, under a cgroup2 mount) is writable and offers the controllers.
  A v2 cgroup that hands controllers to its children may hold no process itself,
  so the worker first moves its own processes into a leaf, `ballet-worker`.
- **cgroup v1** where its hierarchies are writable (root on a v1 or hybrid host):
  one directory per hierarchy (memory, pids, cpu), each under the worker's own
  cgroup in it.
A controller found in neither is not enforced; `limits.py` says so at start-up.

Each session's cgroup is `ballet-s<worker pid>-<n>` in every hierarchy: the pid
names the worker, so cgroups a dead worker left are recognised and removed by the
next one (`sweep`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import itertools
import os
import re
import signal
from dataclasses import dataclass, replace
from pathlib import Path

import structlog

from ballet.core.session_limits import LimitValues
from ballet.sessions.confine.reaper import SandboxNotEnded
from ballet.sessions.mounts import Mount, parse_mountinfo

log = structlog.get_logger("ballet.sessions.confine")

CONTROLLERS = ("memory", "pids", "cpu")
WORKER_LEAF = "ballet-worker"
PREFIX = "ballet-s"
CPU_PERIOD_US = 100_000  # the kernel's default period: a quota is a share of each 100 ms
_NAME = re.compile(rf"^{PREFIX}(\d+)-\d+$")
_serial = itertools.count(1)


@dataclass(frozen=True)
class Hierarchy:
    version: int  # 1 or 2
    base: Path  # the worker's own cgroup in it: sessions' cgroups are made under it
    controllers: frozenset[str]  # those of CONTROLLERS it limits


@dataclass(frozen=True)
class CgroupTree:
    hierarchies: tuple[Hierarchy, ...]

    @property
    def controllers(self) -> frozenset[str]:
        return frozenset().union(*(h.controllers for h in self.hierarchies))

    def describe(self, controller: str) -> str:
        for h in self.hierarchies:
            if controller in h.controllers:
                return f"cgroup v{h.version} ({h.base})"
        return "none"


@dataclass(frozen=True)
class Counters:
    """What the kernel counted of a session's cgroup."""

    oom_kills: int = 0  # processes the kernel killed for its memory limit
    fork_refusals: int = 0  # forks refused for its process limit
    memory_peak: int | None = None  # bytes
    cpu_periods: int = 0  # scheduling periods it ran in
    cpu_throttled_periods: int = 0  # of those, periods its quota held it back
    cpu_throttled_seconds: float = 0.0


@functools.cache
def detect() -> CgroupTree | None:
    """The hierarchies this process may make sessions' cgroups in (asked once)."""
    try:
        own = Path("/proc/self/cgroup").read_text()
        mounts = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return None
    found = find_hierarchies(own, mounts)
    return CgroupTree(found) if found else None


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """/proc/<pid>/cgroup as controller -> path; the v2 hierarchy's key is ''."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        _, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        for name in names.split(",") if names else [""]:
            found.setdefault(name, path)
    return found


def find_hierarchies(proc_cgroup: str, mountinfo: str) -> tuple[Hierarchy, ...]:
    """The hierarchies holding the worker's own cgroup that it may make cgroups in,
    each with the controllers it offers (a v1 controller wins over v2's, where it is)."""
    own = parse_proc_cgroup(proc_cgroup)
    mounts = parse_mountinfo(mountinfo)
    found: list[Hierarchy] = []
    taken: set[str] = set()
    for mount in mounts:  # v1: a hierarchy per mount of type cgroup
        controllers = frozenset(c for c in CONTROLLERS if c in mount.options) - taken
        path = next((own[c] for c in controllers if c in own), None)
        if mount.fstype != "cgroup" or not controllers or path is None:
            continue
        base = _under(mount, path)
        if base is not None and not (base / "cpu.cfs_quota_us").exists():
            controllers -= {"cpu"}  # a kernel without CPU bandwidth control: no quota
        if base is not None and controllers and os.access(base, os.W_OK | os.X_OK):
            found.append(Hierarchy(1, base, controllers))
            taken |= controllers
    for mount in mounts:  # v2: the unified hierarchy, where delegated
        if mount.fstype != "cgroup2" or "" not in own:
            continue
        base = _under(mount, own[""])
        if base is None:
            continue
        if base.name == WORKER_LEAF:  # moved there by this worker (or an earlier one)
            base = base.parent
        usable = _v2_offers(base) - taken
        if usable and all(os.access(base / f, os.W_OK) for f in _V2_FILES):
            found.append(Hierarchy(2, base, usable))
        break
    return tuple(found)


_V2_FILES = ("cgroup.procs", "cgroup.subtree_control")


def _under(mount: Mount, path: str) -> Path | None:
    """Where the cgroup `path` (as /proc/self/cgroup names it) is in this mount."""
    root = mount.root.rstrip("/")
    if root and not (path == root or path.startswith(root + "/")):
        return None
    return mount.point / path[len(root) :].lstrip("/")


def _v2_offers(base: Path) -> frozenset[str]:
    try:
        available = (base / "cgroup.controllers").read_text().split()
    except OSError:
        return frozenset()
    return frozenset(c for c in CONTROLLERS if c in available)


def prepare(tree: CgroupTree) -> None:
    """Make each hierarchy ready for sessions' cgroups (once, at start-up): a v2 one
    hands its controllers to its children, its processes moved to a leaf first; and
    the cgroups a dead worker left are removed. Raises OSError when it cannot."""
    for hierarchy in tree.hierarchies:
        if hierarchy.version == 2:
            _delegate(hierarchy)
        sweep(hierarchy)


def _delegate(hierarchy: Hierarchy) -> None:
    control = hierarchy.base / "cgroup.subtree_control"
    enabled = set(control.read_text().split())
    missing = sorted(hierarchy.controllers - enabled)
    if not missing:
        return
    leaf = hierarchy.base / WORKER_LEAF
    leaf.mkdir(exist_ok=True)
    for _ in range(100):  # a process may fork while we move them
        pids = (hierarchy.base / "cgroup.procs").read_text().split()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                (leaf / "cgroup.procs").write_text(pid)
    control.write_text(" ".join(f"+{c}" for c in missing))


def sweep(hierarchy: Hierarchy) -> None:
    """Remove the sessions' cgroups of workers that are gone (their processes killed)."""
    with contextlib.suppress(OSError):
        for entry in hierarchy.base.iterdir():
            match = _NAME.match(entry.name)
            if match and not _alive(int(match[1])) and entry.is_dir():
                _kill_all((entry / "cgroup.procs",), entry)
                with contextlib.suppress(OSError):
                    entry.rmdir()
                    log.info("removed a dead worker's session cgroup", path=str(entry))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SessionCgroup:
    """One session's cgroup, in every hierarchy: made with its limits, read, removed."""

    def __init__(self, dirs: tuple[tuple[Hierarchy, Path], ...]) -> None:
        self.dirs = dirs
        self.final: Counters | None = None  # read once every process had gone

    @classmethod
    def create(cls, tree: CgroupTree, limits: LimitValues) -> SessionCgroup:
        """A new cgroup with `limits` (those its controllers enforce); OSError if not."""
        name = f"{PREFIX}{os.getpid()}-{next(_serial)}"
        made: list[tuple[Hierarchy, Path]] = []
        try:
            for hierarchy in tree.hierarchies:
                path = hierarchy.base / name
                path.mkdir()
                made.append((hierarchy, path))
                _write_limits(hierarchy, path, limits)
        except OSError:
            for _, path in made:
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise
        return cls(tuple(made))

    @property
    def join_files(self) -> tuple[Path, ...]:
        """Where a process joins it, itself: v1's `tasks`, where it writes `0` (its own
        thread, so the kernel takes no lock over every thread group, which waits for an
        RCU grace period: ~10 ms a session on a busy machine); v2's `cgroup.procs`,
        where it writes its pid (mount cgroup2 with `favordynmods` to spare that wait)."""
        return tuple(
            path / ("cgroup.procs" if hierarchy.version == 2 else "tasks")
            for hierarchy, path in self.dirs
        )

    def pids(self) -> set[int]:
        found: set[int] = set()
        for procs in (path / "cgroup.procs" for _, path in self.dirs):
            with contextlib.suppress(OSError):
                found |= {int(p) for p in procs.read_text().split()}
        return found

    def counters(self) -> Counters:
        if self.final is not None:
            return self.final
        counters = Counters()
        for hierarchy, path in self.dirs:
            counters = _read_counters(hierarchy, path, counters)
        return counters

    def kill(self) -> None:
        """SIGKILL every process in it (the session is over, or pressed on a limit)."""
        for hierarchy, path in self.dirs:
            _kill_all((path / "cgroup.procs",), path if hierarchy.version == 2 else None)

    async def remove(self, timeout: float) -> Counters:
        """Kill what is left, keep the final counters, remove the cgroup. Idempotent;
        SandboxNotEnded when a process of it outlives `timeout`."""
        if self.final is not None:
            return self.final
        deadline = asyncio.get_running_loop().time() + timeout
        while pids := self.pids():
            if asyncio.get_running_loop().time() > deadline:
                raise SandboxNotEnded(
                    f"{len(pids)} processes of a session's cgroup outlived it; "
                    "nothing of the session was pushed"
                )
            self.kill()
            await asyncio.sleep(0.01)
        self.final = self.counters()
        for _, path in self.dirs:
            await _rmdir(path, deadline)
        return self.final


def _write_limits(hierarchy: Hierarchy, path: Path, limits: LimitValues) -> None:
    on = hierarchy.controllers
    v2 = hierarchy.version == 2
    if "memory" in on and limits.memory is not None:
        if v2:
            (path / "memory.max").write_text(str(limits.memory))
            _write_if_there(path / "memory.swap.max", "0")  # no swapping past the limit
        else:
            (path / "memory.limit_in_bytes").write_text(str(limits.memory))
            # Memory and swap together: swap is no way around the limit.
            _write_if_there(path / "memory.memsw.limit_in_bytes", str(limits.memory))
    if "pids" in on and limits.processes is not None:
        (path / "pids.max").write_text(str(limits.processes))
    if "cpu" in on and limits.cpus is not None:
        quota = max(1000, round(limits.cpus * CPU_PERIOD_US))
        if v2:
            (path / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
        else:
            (path / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(quota))


def _write_if_there(path: Path, value: str) -> None:
    if path.exists():
        path.write_text(value)


def _read_counters(hierarchy: Hierarchy, path: Path, counters: Counters) -> Counters:
    """`counters` with what this hierarchy's controllers counted."""
    on, v2 = hierarchy.controllers, hierarchy.version == 2
    if "memory" in on:
        events = _keyed(path / ("memory.events" if v2 else "memory.oom_control"))
        peak = _number(path / ("memory.peak" if v2 else "memory.max_usage_in_bytes"))
        counters = replace(counters, oom_kills=events.get("oom_kill", 0), memory_peak=peak)
    if "pids" in on:
        counters = replace(counters, fork_refusals=_keyed(path / "pids.events").get("max", 0))
    if "cpu" in on:
        stat = _keyed(path / "cpu.stat")
        held = stat.get("throttled_usec", 0) / 1e6 if v2 else stat.get("throttled_time", 0) / 1e9
        counters = replace(
            counters,
            cpu_periods=stat.get("nr_periods", 0),
            cpu_throttled_periods=stat.get("nr_throttled", 0),
            cpu_throttled_seconds=held,
        )
    return counters


def _keyed(path: Path) -> dict[str, int]:
    """A cgroup file of `key value` lines."""
    found: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                found[key] = int(value)
    return found


def _number(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _kill_all(procs_files: tuple[Path, ...], v2_dir: Path | None) -> None:
    if v2_dir is not None and (v2_dir / "cgroup.kill").exists():
        with contextlib.suppress(OSError):
            (v2_dir / "cgroup.kill").write_text("1")  # the kernel kills them all at once
            return
    for procs in procs_files:
        with contextlib.suppress(OSError):
            for pid in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid), signal.SIGKILL)


async def _rmdir(path: Path, deadline: float) -> None:
    """Remove a cgroup directory; the kernel may take a moment after its last exit."""
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY or asyncio.get_running_loop().time() > deadline:
                log.error("a session's cgroup could not be removed", path=str(path))
                return
        await asyncio.sleep(0.01)
