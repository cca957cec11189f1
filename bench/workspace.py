"""Benchmark: a session workspace vs. `git worktree add` vs. a full clone.

Builds (once, cached under bench/out/) a repository of 2,000 files whose
history holds over 100 MB of incompressible blobs, made with `git fast-import`.
Then times, side by side and each several times (median shown):
- workspace: `Workspaces.create` from a fresh mirror (clone --shared + checkout
  of the ticket branch + identity), as a session gets it;
- worktree: `git worktree add --detach` of the mirror, the floor for a checkout;
- full clone: `git clone --no-local`, which copies every object.

Targets: workspace ≤ 1.5× the worktree, and ≥ 20× faster than the full clone.
Run: .venv/bin/python bench/workspace.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ballet.sessions import Workspaces

OUT = Path(__file__).resolve().parent / "out"
ORIGIN = OUT / "origin.git"
FILES = 2_000
SMALL_FILE_BYTES = 1_024
ASSETS = 20  # files rewritten by every commit: the history grows, the tree does not
ASSET_BYTES = 50 * 1024
COMMITS = 110  # 110 × 20 × 50 KiB ≈ 110 MiB of history


def git_env() -> dict[str, str]:
    """git without the machine's configuration, so every machine measures the same git."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": "/nonexistent",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def fast_import_stream() -> Iterator[bytes]:
    who = b"Bench <bench@example.com> 1700000000 +0000"
    for number in range(COMMITS):
        message = f"commit {number}".encode()
        yield b"commit refs/heads/main\n"
        yield b"committer " + who + b"\n"
        yield b"data %d\n%s\n" % (len(message), message)
        if number == 0:
            for index in range(FILES - ASSETS):
                yield _inline(f"src/pkg{index // 100}/mod{index}.txt", os.urandom(SMALL_FILE_BYTES))
        for index in range(ASSETS):
            yield _inline(f"assets/blob{index}.bin", os.urandom(ASSET_BYTES))
        yield b"\n"


def _inline(path: str, data: bytes) -> bytes:
    return b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)


def build_origin() -> None:
    if (ORIGIN / "HEAD").exists():
        return
    print(f"building the benchmark repository in {ORIGIN} (first run only)…", flush=True)
    partial = ORIGIN.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    git("init", "-q", "--bare", "-b", "main", str(partial))
    with subprocess.Popen(
        ["git", "fast-import", "--quiet"], cwd=partial, env=git_env(), stdin=subprocess.PIPE
    ) as importer:
        assert importer.stdin is not None
        for chunk in fast_import_stream():
            importer.stdin.write(chunk)
        importer.stdin.close()
        if importer.wait() != 0:
            sys.exit("git fast-import failed")
    git("repack", "-q", "-a", "-d", cwd=partial)
    partial.rename(ORIGIN)


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(), check=True, capture_output=True, text=True
    )
    return done.stdout


class Stopwatch:
    """Collects the durations of named steps."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    def add(self, name: str, seconds: float) -> None:
        self.times.setdefault(name, []).append(seconds)

    def git(self, name: str, *args: str, cwd: Path | None = None) -> None:
        started = time.perf_counter()
        git(*args, cwd=cwd)
        self.add(name, time.perf_counter() - started)


async def measure(runs: int, root: Path) -> dict[str, list[float]]:
    workspaces = Workspaces(root / "workspaces", parent_env=os.environ)
    started = time.perf_counter()
    mirror = await workspaces.refresh("bench/repo", ORIGIN.as_uri(), None)
    print(f"mirror: first fetch {time.perf_counter() - started:.2f} s (once per repository)")
    started = time.perf_counter()
    await workspaces.refresh("bench/repo", ORIGIN.as_uri(), None)
    print(
        f"mirror: incremental fetch, nothing new: {(time.perf_counter() - started) * 1000:.0f} ms"
    )
    watch = Stopwatch()
    for run in range(runs):
        started = time.perf_counter()
        made = await workspaces.create("bench/repo", key=f"b{run}", branch=f"b/{run}", base="main")
        watch.add("workspace", time.perf_counter() - started)
        await workspaces.remove(made)

        tree, clone, bare = root / f"tree{run}", root / f"clone{run}", root / f"bare{run}"
        watch.git("worktree", "worktree", "add", "-q", "--detach", str(tree), "main", cwd=mirror)
        git("worktree", "remove", "--force", str(tree), cwd=mirror)
        watch.git("full clone", "clone", "-q", "--no-local", str(ORIGIN), str(clone))
        shutil.rmtree(clone)
        # The same two clones without a checkout: what copying the objects costs.
        watch.git(
            "shared, no checkout",
            "clone",
            "-q",
            "--shared",
            "--no-checkout",
            str(mirror),
            str(bare),
        )
        shutil.rmtree(bare)
        watch.git(
            "full, no checkout",
            "clone",
            "-q",
            "--no-local",
            "--no-checkout",
            str(ORIGIN),
            str(bare),
        )
        shutil.rmtree(bare)
        print(f"run {run + 1}/{runs} done", flush=True)
    return watch.times


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    build_origin()
    pack_bytes = sum(p.stat().st_size for p in (ORIGIN / "objects" / "pack").glob("*.pack"))
    files = len(git("ls-tree", "-r", "--name-only", "main", cwd=ORIGIN).splitlines())
    print(f"repository: {files} files, {pack_bytes / 2**20:.1f} MiB packed history")
    with tempfile.TemporaryDirectory(prefix="ballet-bench-") as scratch:
        results = asyncio.run(measure(args.runs, Path(scratch)))

    median = {name: statistics.median(times) for name, times in results.items()}
    print(f"\n{'method':<20} {'median':>10} {'min':>10} {'max':>10}")
    for name, times in results.items():
        print(
            f"{name:<20} {median[name] * 1000:>8.0f}ms {min(times) * 1000:>8.0f}ms "
            f"{max(times) * 1000:>8.0f}ms"
        )
    vs_worktree = median["workspace"] / median["worktree"]
    vs_clone = median["full clone"] / median["workspace"]
    copy = median["full, no checkout"] / median["shared, no checkout"]
    print(f"\nworkspace / worktree:   {vs_worktree:.2f}×  (target ≤ 1.5×)")
    print(f"full clone / workspace: {vs_clone:.1f}×  (target ≥ 20×)")
    print(f"objects only, full / shared clone: {copy:.1f}×  (without the checkout both share)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
