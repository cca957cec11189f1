"""`ballet worker` processes of their own for a `Stack` started without one, to run
several at once or kill one as an OOM would."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from ballet.demo.stack import Stack, worker_env


@contextlib.contextmanager
def worker_process(stack: Stack, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A `ballet worker` on the stack's Valkey and sandbox; stopped (TERM) when the block ends."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALLET_")}
    env.pop("REDIS_URL", None)
    env.update(worker_env(stack.settings))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ballet", "worker"], env=env, stdout=out, stderr=out
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def files_named(root: Path, name: str) -> list[Path]:
    """Files called `name` under `root`, while a worker works there: os.walk, not
    rglob, because the worker renames directories as we look (a mirror's
    `.partial` clone) and rglob fails on one that vanished mid-walk."""
    return [Path(d) / name for d, _, files in os.walk(root) if name in files]
