"""Helpers of the tests that run `ballet worker` processes of their own
(`ballet.demo.stack.worker_process`), to run several at once or kill one as an OOM would."""

from __future__ import annotations

import os
from pathlib import Path


def files_named(root: Path, name: str) -> list[Path]:
    """Files called `name` under `root`, while a worker works there: os.walk, not
    rglob, because the worker renames directories as we look (a mirror's
    `.partial` clone) and rglob fails on one that vanished mid-walk."""
    return [Path(d) / name for d, _, files in os.walk(root) if name in files]
