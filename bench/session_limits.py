"""Benchmark: what a session's resource limits add to its start-up, and where the
confined start-up goes, side by side in one run.

1. Start-up, alternating rounds: a session process that does nothing (`true`), run by
   `sessions.process.run_process` as the runner does, (a) unconfined, (b) confined
   without limits, (c) confined with limits: its workspace a size-limited tmpfs
   (mounted and unmounted in the round), a cgroup per session (made, joined by the
   shell that starts bwrap, read and removed) and rlimits. Medians and p90 of
   `--runs` rounds. Targets: (c) − (b) ≤ 10 ms; (c) ≤ 40 ms.
2. Where the confined start-up goes: each part alone, alternating, medians —
   bwrap with the session's mounts and namespaces running `true`, the relay's Python
   (`python -I -S -c pass`, and the relay itself, unconfined), the limits' shell, the
   cgroup made and removed, the tmpfs mounted and unmounted, and `confined()`'s own
   set-up and tear-down (egress proxy, seccomp filter, mount plan, the init's end).

Needs bwrap, and for (c) a writable cgroup and the right to mount (root here).
Run: .venv/bin/python bench/session_limits.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from ballet.core.session_limits import GIB, MIB, LimitValues
from ballet.sessions.confine import Isolation, SessionPaths, confined
from ballet.sessions.confine.bwrap import RELAY
from ballet.sessions.confine.cgroups import SessionCgroup, detect
from ballet.sessions.confine.limits import LimitPlan, limited_argv, plan_limits
from ballet.sessions.disk import can_mount, mount_limited, unmount
from ballet.sessions.process import run_process

LIMITS = LimitValues(memory=4 * GIB, disk=64 * MIB, processes=512, cpus=1.0)
Case = Callable[[], Awaitable[None]]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        sys.exit("bench/session_limits.py needs bwrap: apt-get install bubblewrap")
    plan = plan_limits(LIMITS, cgroups=detect(), can_mount=can_mount())
    with tempfile.TemporaryDirectory(prefix="ballet-bench-") as scratch:
        asyncio.run(_startup(Path(scratch), plan, args.runs))
        asyncio.run(_parts(Path(scratch), plan, args.runs))


def _workspace(root: Path) -> SessionPaths:
    for name in ("repo", "home", "files", "mirror/objects"):
        (root / name).mkdir(parents=True, exist_ok=True)
    return SessionPaths(root / "repo", root / "home", root / "files", root / "mirror/objects", root)


async def _startup(scratch: Path, plan: LimitPlan, runs: int) -> None:
    env = {"PATH": os.environ["PATH"]}
    plain_paths = _workspace(scratch / "plain")
    limited_root = scratch / "limited"
    limited_root.mkdir()

    async def unconfined() -> None:
        await run_process(["true"], cwd=plain_paths.clone, env=env, timeout_seconds=30)

    async def confined_only() -> None:
        async with confined(
            Isolation(), plain_paths, ["true"], env, runtime_rules=(), session="b"
        ) as box:
            outcome = await run_process(
                box.argv, cwd=plain_paths.clone, env=box.env, timeout_seconds=30, supervisor=box
            )
            assert outcome.exit_code == 0, outcome.output_tail(2000)

    async def with_limits() -> None:
        mount_limited(limited_root, plan.values.disk or 64 * MIB)
        try:
            base = _workspace(limited_root)
            tmp = limited_root / "tmp"
            tmp.mkdir()
            paths = SessionPaths(
                base.clone, base.home, base.files, base.mirror_objects, base.workspaces_root, tmp
            )
            isolation = Isolation(limits=plan)
            async with confined(
                isolation, paths, ["true"], env, runtime_rules=(), session="b", limits=plan.values
            ) as box:
                outcome = await run_process(
                    box.argv, cwd=paths.clone, env=box.env, timeout_seconds=30, supervisor=box
                )
                assert outcome.exit_code == 0, outcome.output_tail(2000)
        finally:
            unmount(limited_root)

    cases = {"unconfined": unconfined, "confined": confined_only, "with limits": with_limits}
    times = await _alternating(cases, runs)
    print(f"session start-up, process `true`, {runs} alternating rounds (median, p90, min):")
    for name, values in times.items():
        print(
            f"  {name:<12} {_ms(statistics.median(values))} ms   p90 {_ms(_p90(values))} ms"
            f"   min {_ms(min(values))} ms"
        )
    # Each round's own difference: the load of a shared machine moves both alike.
    paired = [b - a for a, b in zip(times["confined"], times["with limits"], strict=True)]
    added = statistics.median(paired)
    print(f"  added by the limits: {_ms(added)} ms per session, the median of each round's"
          " difference (target ≤ 10 ms)")  # fmt: skip
    print(f"  confined start-up with limits: {_ms(statistics.median(times['with limits']))} ms"
          " (target ≤ 40 ms)")  # fmt: skip
    print(f"  enforced: {plan.values.summary()}\n")


async def _parts(scratch: Path, plan: LimitPlan, runs: int) -> None:
    env = {"PATH": os.environ["PATH"]}
    paths = _workspace(scratch / "parts")
    async with confined(Isolation(), paths, ["true"], env, runtime_rules=(), session="b") as box:
        # Its egress socket lives as long as this block: bwrap binds it.
        argv = _without_fds(box.argv)
        bwrap_true = [*argv[: argv.index("--") + 1], "true"]
        await _measure_parts(scratch, plan, runs, paths, env, bwrap_true)


async def _measure_parts(
    scratch: Path,
    plan: LimitPlan,
    runs: int,
    paths: SessionPaths,
    env: dict[str, str],
    bwrap_true: list[str],
) -> None:
    python = str(Path(sys.executable).resolve())
    socket_dir = Path(tempfile.mkdtemp(prefix="ballet-bench-sock-"))
    relay_socket = socket_dir / "p.sock"

    def run(argv: list[str]) -> Case:
        async def case() -> None:
            done = await asyncio.to_thread(subprocess.run, argv, cwd=paths.clone, env=env)
            assert done.returncode == 0, argv

        return case

    async def setup_and_teardown() -> None:
        async with confined(Isolation(), paths, ["true"], env, runtime_rules=(), session="b"):
            pass

    async def cgroup() -> None:
        assert plan.cgroups is not None
        made = SessionCgroup.create(plan.cgroups, plan.values)
        await made.remove(5)

    async def tmpfs() -> None:
        target = scratch / "mount"
        target.mkdir(exist_ok=True)
        mount_limited(target, 64 * MIB)
        unmount(target)

    server = socket.socket(socket.AF_UNIX)
    server.bind(str(relay_socket))
    server.listen()
    cases: dict[str, Case] = {
        "bwrap, its mounts and namespaces, `true`": run(bwrap_true),
        "python -I -S -c pass": run([python, "-I", "-S", "-c", "pass"]),
        "the relay (unconfined), `true`": run(
            [python, "-I", "-S", str(RELAY), str(relay_socket), "45901", "--", "true"]
        ),
        "confined(): set-up and tear-down": setup_and_teardown,
    }
    if plan.cgroups is not None:
        cgroup_made = SessionCgroup.create(plan.cgroups, plan.values)
        cases["the limits' shell, `true`"] = run(limited_argv(["true"], plan.values, cgroup_made))
        cases["a cgroup made and removed"] = cgroup
    if plan.workspace_disk:
        cases["a tmpfs mounted and unmounted"] = tmpfs
    try:
        times = await _alternating(cases, max(10, runs // 2))
    finally:
        server.close()
        shutil.rmtree(socket_dir, ignore_errors=True)
        if plan.cgroups is not None:
            await cgroup_made.remove(5)
    print("where it goes, each part alone (median, min):")
    for name, values in times.items():
        print(f"  {name:<42} {_ms(statistics.median(values))} ms   min {_ms(min(values))} ms")


def _without_fds(argv: list[str]) -> list[str]:
    """The sandbox's argv without the descriptors only its own run holds."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--info-fd", "--seccomp"):
            skip = True
        else:
            kept.append(arg)
    return kept


async def _alternating(cases: dict[str, Case], runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in cases}
    for case in cases.values():  # warm caches (page cache, binaries, Python's stdlib)
        await case()
    for _ in range(runs):
        for name, case in cases.items():
            started = time.perf_counter()
            await case()
            times[name].append(time.perf_counter() - started)
    return times


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:6.1f}"


def _p90(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.9) - 1)]


if __name__ == "__main__":
    main()
