"""Writing settings into an env file: the App's credentials after the setup flow.

The file is replaced atomically and readable by its owner only (0600): it
holds the App's private key. Lines of other settings are kept; lines naming
the variables written (or dropped) are replaced. Values are written in double
quotes with newlines escaped, as python-dotenv (pydantic-settings) reads them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


def quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def update_env_file(
    path: Path, values: Mapping[str, str], *, drop: Iterable[str] = (), header: str = ""
) -> None:
    """Set `values` in the env file at `path` (made if missing) and remove `drop`."""
    replaced = set(values) | set(drop)
    kept: list[str] = []
    if path.exists():
        lines = path.read_text().splitlines()
        kept = [line for line in lines if not _names(line, replaced)]
    added = [f"# {line}" for line in header.splitlines()] if header else []
    added += [f"{name}={quote(value)}" for name, value in values.items()]
    text = "\n".join([*kept, *added]) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.unlink(missing_ok=True)
    # Owner-only from creation: the key never sits in a readable file, even briefly.
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(partial, path)


def _names(line: str, names: set[str]) -> bool:
    match = _ASSIGNMENT.match(line)
    return match is not None and match.group(1) in names
