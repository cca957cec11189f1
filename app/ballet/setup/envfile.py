"""Writing settings into an env file: the App's credentials after the setup flow.

The file is replaced atomically and readable by its owner only (0600): it
holds the App's private key. Lines of other settings are kept; lines naming
the variables written (or dropped) are replaced.

Two readers take this file: Ballet (`--env-file`, python-dotenv through
pydantic-settings) and `kubectl create secret generic --from-env-file`
(docs/deploy.md), which keeps everything after the first `=` of a line as it is:
quotes, escapes and trailing spaces. So values are written bare, one line each,
and a value the two would read differently is refused rather than written. A
multi-line value (the private key) is written with its newlines as `\\n`, which
both read literally and Ballet turns back into newlines (Settings.private_key_pem).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from dotenv import dotenv_values

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


class EnvFileError(ValueError):
    """A value cannot be written so that Ballet and kubectl read it alike."""


def env_line(name: str, value: str) -> str:
    """`NAME=value` as both readers take it; raises EnvFileError naming what is wrong."""
    written = value.replace("\n", "\\n")
    if "\r" in value or ("\n" in value and "\\n" in value):
        raise EnvFileError(
            f"{name}'s value holds a carriage return or a literal \\n, which the env file"
            " cannot keep apart from a newline; set it in the environment instead"
        )
    line = f"{name}={written}"
    # python-dotenv strips trailing blanks and ` #…`, unquotes, expands ${…}; kubectl
    # keeps the rest of the line verbatim. Both must give back `written`.
    dotenv = dotenv_values(stream=io.StringIO(line + "\n"), interpolate=True).get(name)
    if dotenv != written or written != written.strip():
        raise EnvFileError(
            f"{name}'s value would read differently in Ballet and in `kubectl create secret"
            " --from-env-file` (it starts or ends with a blank or a quote, holds ` #` or"
            " `${`); set it in the environment instead"
        )
    return line


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
    added += [env_line(name, value) for name, value in values.items()]
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
