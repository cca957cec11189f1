"""Benchmark: a session workspace vs. `git worktree add` vs. full clones, local and over HTTP.

Builds (once per shape, cached under bench/out/) a repository of `--files` files
whose history holds `--history-mb` MiB of incompressible blobs, made with
`git fast-import`. The tree at the tip is the same whatever the history: the
history grows by more commits rewriting the same 20 assets. Then times, side by
side and interleaved, each `--runs` times (median shown):
- workspace: `Workspaces.create` from the mirror (clone --shared + checkout of
  the ticket branch + identity), as a session gets it;
- refresh: `Workspaces.refresh` over HTTP with nothing new, which every session
  start also pays (session start = refresh + workspace): as the worker has it, a
  look at the origin's refs (sessions/remote_refs.py) finding no fetch is needed;
- worktree: `git worktree add --detach` of the mirror, the floor for a checkout;
- full clone: `git clone --no-local`, which copies every object on the same disk;
- HTTP clone: what a session would do without the mirror: `git clone` from the
  origin over git's smart HTTP (the sandbox's streaming `git http-backend`, with
  an installation token as Ballet sends it). Loopback is the best case: from
  GitHub the transfer is slower still;
- the same three clones without a checkout, to show where the time goes.

It refuses to start without room for the origin, the mirror and a clone.
Targets (issue 6): workspace ≤ 1.5× the worktree, and ≥ 20× faster than a full clone.
Run: .venv/bin/python bench/workspace.py [--runs N] [--files N] [--history-mb N] [--scratch DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from ballet.sandbox.auth import issue_token
from ballet.sandbox.server import BackgroundSandbox
from ballet.sandbox.state import Repo
from ballet.sessions import Workspaces, remote_refs
from ballet.sessions.git_auth import auth_environment

OUT = Path(__file__).resolve().parent / "out"
MIB, GIB = 2**20, 2**30
SMALL_FILE_BYTES = 1_024
ASSETS = 20  # files rewritten by every commit: the history grows, the tree does not
ASSET_BYTES = 50 * 1024
MIN_FILES, MIN_HISTORY_MIB = 1_500, 100  # issue 6's minimum repository
REPO = "bench/repo"


@dataclass(frozen=True)
class Shape:
    files: int
    history_mib: int

    @property
    def origin(self) -> Path:
        return OUT / f"origin-{self.files}files-{self.history_mib}mib.git"

    @property
    def commits(self) -> int:
        """Enough commits of fresh assets for the small files and assets to reach the size."""
        small = (self.files - ASSETS) * SMALL_FILE_BYTES
        return max(1, math.ceil((self.history_mib * MIB - small) / (ASSETS * ASSET_BYTES)))


def require_free_space(shape: Shape, scratch: Path) -> None:
    """Refuse before filling a disk: the origin (unless cached) takes the history once
    under bench/out/, and the mirror plus one clone at a time take it twice in scratch."""
    history = shape.history_mib * MIB
    needs = [(scratch, 2 * history + GIB)]
    if not (shape.origin / "HEAD").exists():
        needs.append((OUT.parent, history + GIB))
    for where, need in needs:
        free = shutil.disk_usage(where).free
        if free < need:
            sys.exit(
                f"{where} has {free / GIB:.1f} GiB free but --history-mb {shape.history_mib} "
                f"needs about {need / GIB:.1f} GiB there: free some space, pass a smaller "
                "--history-mb, or put the scratch elsewhere with --scratch"
            )


def git_env() -> dict[str, str]:
    """git without the machine's configuration, so every machine measures the same git."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": "/nonexistent",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def git(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env or git_env(), check=True, capture_output=True, text=True
    )
    return done.stdout


def fast_import_stream(shape: Shape) -> Iterator[bytes]:
    who = b"Bench <bench@example.com> 1700000000 +0000"
    for number in range(shape.commits):
        message = f"commit {number}".encode()
        yield b"commit refs/heads/main\n"
        yield b"committer " + who + b"\n"
        yield b"data %d\n%s\n" % (len(message), message)
        if number == 0:
            for index in range(shape.files - ASSETS):
                yield _inline(f"src/pkg{index // 100}/mod{index}.txt", os.urandom(SMALL_FILE_BYTES))
        for index in range(ASSETS):
            yield _inline(f"assets/blob{index}.bin", os.urandom(ASSET_BYTES))
        yield b"\n"


def _inline(path: str, data: bytes) -> bytes:
    return b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)


def build_origin(shape: Shape) -> None:
    origin = shape.origin
    if (origin / "HEAD").exists():
        return
    print(f"building {origin} ({shape.commits} commits; first run only)…", flush=True)
    started = time.perf_counter()
    partial = origin.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    git("init", "-q", "--bare", "-b", "main", str(partial))
    with subprocess.Popen(
        ["git", "fast-import", "--quiet"], cwd=partial, env=git_env(), stdin=subprocess.PIPE
    ) as importer:
        assert importer.stdin is not None
        for chunk in fast_import_stream(shape):
            importer.stdin.write(chunk)
        importer.stdin.close()
        if importer.wait() != 0:
            sys.exit("git fast-import failed")
    # One pack with a bitmap, as a hosted origin serves clones. Random blobs have no
    # deltas, so searching for them (--window) would only spend minutes at 1 GiB.
    git("repack", "-q", "-a", "-d", "--window=0", cwd=partial)
    partial.rename(origin)
    print(f"built in {time.perf_counter() - started:.0f} s", flush=True)


@contextmanager
def served_over_http(origin: Path, scratch: Path) -> Iterator[tuple[str, str]]:
    """The origin as `bench/repo` in a sandbox on loopback; yields (clone URL, token).

    The repository is registered directly, before the server starts, because the
    sandbox's admin API only makes new repositories and this one already exists."""
    server = BackgroundSandbox(scratch / "sandbox")
    sandbox = server.sandbox
    path = sandbox.data_dir / f"{REPO}.git"
    path.parent.mkdir(parents=True)
    path.symlink_to(origin)  # served in place: a copy of 1 GiB would only cost time
    owner, name = REPO.split("/")
    at = datetime.now(UTC)
    repo = Repo(
        sandbox.next_id(), owner, name, "main", path, at, {}, sandbox.installation_for(owner)
    )
    sandbox.repos[REPO] = repo
    token = issue_token(sandbox, repo.installation_id, at).token
    with server:
        yield f"{server.api_url}/{REPO}.git", token


def file_creation_ms(directory: Path, count: int = 500) -> float:
    """What creating one small file costs where the workspaces go: a checkout's unit of work."""
    probe = directory / "probe"
    probe.mkdir()
    started = time.perf_counter()
    for index in range(count):
        (probe / str(index)).write_bytes(b"x" * SMALL_FILE_BYTES)
    elapsed = time.perf_counter() - started
    shutil.rmtree(probe)
    return elapsed / count * 1000


class Stopwatch:
    """Collects the durations of named steps."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    def add(self, name: str, seconds: float) -> None:
        self.times.setdefault(name, []).append(seconds)

    def git(self, name: str, *args: str, cwd: Path | None = None, env: Mapping[str, str]) -> None:
        started = time.perf_counter()
        git(*args, cwd=cwd, env=env)
        self.add(name, time.perf_counter() - started)


async def measure(runs: int, origin: Path, root: Path, url: str, token: str) -> Stopwatch:
    async with remote_refs.new_client() as refs_http:
        return await _measure(runs, origin, root, url, token, refs_http)


async def _measure(
    runs: int, origin: Path, root: Path, url: str, token: str, refs_http: httpx.AsyncClient
) -> Stopwatch:
    workspaces = Workspaces(root / "workspaces", parent_env=os.environ, refs_http=refs_http)
    started = time.perf_counter()
    mirror = await workspaces.refresh(REPO, url, token)
    print(f"mirror: first fetch over HTTP {time.perf_counter() - started:.2f} s (once per repo)")
    local, http = git_env(), auth_environment(git_env(), token)
    watch = Stopwatch()
    for run in range(runs):
        started = time.perf_counter()
        await workspaces.refresh(REPO, url, token)
        watch.add("refresh", time.perf_counter() - started)
        started = time.perf_counter()
        made = await workspaces.create(REPO, key=f"b{run}", branch=f"b/{run}", base="main")
        watch.add("workspace", time.perf_counter() - started)
        await workspaces.remove(made)
        watch.add("session start", watch.times["refresh"][-1] + watch.times["workspace"][-1])

        tree, clone = root / f"tree{run}", root / f"clone{run}"
        watch.git(
            "worktree",
            "worktree",
            "add",
            "-q",
            "--detach",
            str(tree),
            "main",
            cwd=mirror,
            env=local,
        )
        git("worktree", "remove", "--force", str(tree), cwd=mirror)
        for name, options, source, env in [
            ("full clone", ["--no-local"], str(origin), local),
            ("HTTP clone", [], url, http),
            ("shared, no checkout", ["--shared", "--no-checkout"], str(mirror), local),
            ("full, no checkout", ["--no-local", "--no-checkout"], str(origin), local),
            ("HTTP, no checkout", ["--no-checkout"], url, http),
        ]:
            watch.git(name, "clone", "-q", *options, source, str(clone), env=env)
            shutil.rmtree(clone)
        print(f"run {run + 1}/{runs} done", flush=True)
    return watch


def print_report(times: dict[str, list[float]]) -> None:
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"\n{'method':<20} {'median':>10} {'min':>10} {'max':>10}")
    for name, values in times.items():
        print(
            f"{name:<20} {median[name] * 1000:>8.0f}ms {min(values) * 1000:>8.0f}ms "
            f"{max(values) * 1000:>8.0f}ms"
        )
    workspace, start = median["workspace"], median["session start"]
    print(f"\nworkspace / worktree:        {workspace / median['worktree']:.2f}×  (target ≤ 1.5×)")
    print(f"full clone / workspace:      {median['full clone'] / workspace:.1f}×  (target ≥ 20×)")
    print(f"HTTP clone / workspace:      {median['HTTP clone'] / workspace:.1f}×")
    print(
        f"HTTP clone / session start:  {median['HTTP clone'] / start:.1f}×  (refresh + workspace)"
    )
    print("where the time goes (objects only, no checkout):")
    shared = median["shared, no checkout"]
    for name in ("full, no checkout", "HTTP, no checkout"):
        print(f"  {name:<18} {median[name] / shared:6.1f}× the shared clone")
    print(f"  checkout share of the workspace: {(workspace - shared) / workspace:.0%}")


def at_least(minimum: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"{value} is below issue 6's minimum of {minimum} {what}; pass {minimum} or more"
            )
        return value

    return parse


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=at_least(MIN_FILES, "files"), default=2_000)
    parser.add_argument(
        "--history-mb", type=at_least(MIN_HISTORY_MIB, "MiB"), default=110,
        help="MiB of history (incompressible blobs)",
    )  # fmt: skip
    parser.add_argument(
        "--scratch", type=Path, default=None,
        help="where workspaces and clones are made (default: the system's temp directory); "
        "/dev/shm shows the cost without the disk's file creation",
    )  # fmt: skip
    args = parser.parse_args()
    shape = Shape(args.files, args.history_mb)
    require_free_space(shape, args.scratch or Path(tempfile.gettempdir()))
    build_origin(shape)
    origin = shape.origin
    pack_bytes = sum(p.stat().st_size for p in (origin / "objects" / "pack").glob("*.pack"))
    files = len(git("ls-tree", "-r", "--name-only", "main", cwd=origin).splitlines())
    print(f"repository: {files} files, {pack_bytes / MIB:.1f} MiB packed history")
    with tempfile.TemporaryDirectory(prefix="ballet-bench-", dir=args.scratch) as scratch:
        root = Path(scratch)
        per_file = file_creation_ms(root)
        print(
            f"workspaces and clones under {root}, where creating a 1 KiB file costs "
            f"{per_file:.3f} ms (× {files} files = {per_file * files / 1000:.2f} s of any checkout)"
        )
        with served_over_http(origin, root) as (url, token):
            watch = asyncio.run(measure(args.runs, origin, root, url, token))
    print_report(watch.times)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
