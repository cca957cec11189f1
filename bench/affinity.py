"""Benchmark: what a ticket's next session saves by running on the worker of its last.

Affinity (docs/deploy.md, "Agent pools") keeps a ticket's next session for the
worker that ran its last one, whose mirror of the repository is warm. This
measures the start-up of that second session, side by side and interleaved,
`--runs` times (median shown), as a session job does it:
- warm: the worker that ran the first session. Its mirror is one push behind
  (the first session's commit on the ticket branch): the fetch brings that
  commit only, then the session's clone (`--shared`, checkout of the branch);
- cold: another worker of the pool, which never saw the repository: its fetch
  is the mirror's first, every object over HTTP, then the same clone.

The repository is bench/workspace.py's (`--files` files, `--history-mb` MiB of
history; built once and cached under bench/out/), served over git's smart HTTP
by the sandbox on loopback with an installation token as Ballet sends it, so the
cold fetch is the best case: from GitHub it is slower still.
Run: .venv/bin/python bench/affinity.py [--runs N] [--files N] [--history-mb N] [--scratch DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ballet.sessions import Workspaces

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workspace import (
    REPO,
    Shape,
    build_origin,
    git,
    git_env,
    require_free_space,
    served_over_http,
)


def git_with(stdin: str, *args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(), input=stdin, check=True, capture_output=True,
        text=True,
    )  # fmt: skip
    return done.stdout.strip()


def push_a_session_commit(origin: Path, run: int) -> str:
    """What the first session left: one commit on the ticket branch, on top of main."""
    blob = git_with(f"run {run}\n", "hash-object", "-w", "--stdin", cwd=origin)
    listing = git("ls-tree", "main", cwd=origin)
    tree = git_with(listing + f"100644 blob {blob}\tNOTES.md\n", "mktree", cwd=origin)
    who = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]
    commit = git(*who, "commit-tree", tree, "-p", "main", "-m", f"Session {run}", cwd=origin)
    commit = commit.strip()
    git("update-ref", f"refs/heads/ballet/{run}-ticket", commit, cwd=origin)
    return commit


async def second_session(
    workspaces: Workspaces, url: str, token: str, run: int, tag: str
) -> tuple[float, float]:
    """(fetch seconds, clone seconds) of the session's start on these workspaces."""
    started = time.perf_counter()
    await workspaces.refresh(REPO, url, token)
    fetched = time.perf_counter()
    made = await workspaces.create(
        REPO, key=f"{tag}{run}", branch=f"ballet/{run}-ticket", base="main"
    )
    cloned = time.perf_counter()
    await workspaces.remove(made)
    return fetched - started, cloned - fetched


async def measure(
    runs: int, origin: Path, root: Path, url: str, token: str
) -> dict[str, list[float]]:
    warm = Workspaces(root / "warm")
    started = time.perf_counter()
    await warm.refresh(REPO, url, token)  # the first session's fetch, on the warm worker
    first = time.perf_counter() - started
    print(f"first session's fetch (the mirror, made once per worker): {first:.2f} s")
    times: dict[str, list[float]] = {}
    for run in range(runs):
        push_a_session_commit(origin, run)
        for tag in ("warm", "cold"):
            workspaces = warm if tag == "warm" else Workspaces(root / f"cold{run}")
            fetch, clone = await second_session(workspaces, url, token, run, tag)
            for step, seconds in (("fetch", fetch), ("clone", clone), ("start", fetch + clone)):
                times.setdefault(f"{tag} {step}", []).append(seconds)
        print(f"run {run + 1}/{runs} done", flush=True)
    return times


def print_report(times: dict[str, list[float]]) -> None:
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"\n{'second session':<16} {'mirror fetch':>14} {'clone':>10} {'start-up':>10}")
    for tag in ("warm", "cold"):
        print(
            f"{tag + ' worker':<16} {median[f'{tag} fetch'] * 1000:>12.0f}ms "
            f"{median[f'{tag} clone'] * 1000:>8.0f}ms {median[f'{tag} start'] * 1000:>8.0f}ms"
        )
    saved = median["cold start"] - median["warm start"]
    print(
        f"\naffinity saves {saved:.2f} s per session start "
        f"(cold / warm: {median['cold start'] / median['warm start']:.1f}×); a session waits "
        "for its worker one queue poll when that worker is free, at most "
        "BALLET_SESSION_AFFINITY_SECONDS (2 s) when it is busy"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--history-mb", type=int, default=110, help="MiB of history")
    parser.add_argument("--scratch", type=Path, default=None, help="where the workers' data goes")
    args = parser.parse_args()
    shape = Shape(args.files, args.history_mb)
    require_free_space(shape, args.scratch or Path(tempfile.gettempdir()))
    build_origin(shape)
    with tempfile.TemporaryDirectory(prefix="ballet-affinity-", dir=args.scratch) as scratch:
        root = Path(scratch)
        # The sessions' pushes go to a copy that borrows the cached origin's objects.
        origin = root / "origin.git"
        git("clone", "-q", "--bare", "--shared", str(shape.origin), str(origin))
        with served_over_http(origin, root) as (url, token):
            times = asyncio.run(measure(args.runs, origin, root, url, token))
    files = len(git("ls-tree", "-r", "--name-only", "main", cwd=shape.origin).splitlines())
    print(f"repository: {files} files, {args.history_mb} MiB of history")
    print_report(times)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
