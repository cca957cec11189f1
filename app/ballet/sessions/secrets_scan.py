"""Push protection: no commit leaves Ballet carrying a secret the session was given.

Before Ballet pushes a session's branch, every object new to it (`git rev-list
--objects <head> --not <start>`: the commits with their messages and authors,
the trees with their file names, the blobs with their contents) is read
(`git cat-file --batch`, streamed, so a large file is never held whole) and
searched for the value of every declared variable (`Redactor.contains_secret`,
also encoded). The git commands run in the mirror with the clone's objects
lent for the command, as the push itself does (push.py): nothing runs in the
clone. What is found is named by variable and path, never by value.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ballet.sessionlog.redact import Redactor
from ballet.sessions.git import run_git

READ_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Finding:
    variable: str
    where: str  # a path in the commits, or "the message of commit <sha>"


async def find_secret(
    mirror: Path, env: Mapping[str, str], start: str, head: str, redactor: Redactor
) -> Finding | None:
    """The first declared secret in the objects `head` has and `start` has not."""
    if not redactor.names:
        return None
    _, listing, _ = await run_git(
        "rev-list", "--objects", head, "--not", start, cwd=mirror, env=env
    )
    paths: dict[str, str] = {}
    for line in listing.splitlines():
        sha, _, path = line.partition(" ")
        if sha:
            paths.setdefault(sha, path)
    if not paths:
        return None
    process = await asyncio.create_subprocess_exec(
        "git",
        "cat-file",
        "--batch",
        cwd=mirror,
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    writer = asyncio.ensure_future(_write(process.stdin, "".join(f"{s}\n" for s in paths)))
    try:
        return await _scan(process.stdout, paths, redactor)
    finally:
        writer.cancel()
        if process.returncode is None:
            process.kill()
        await process.wait()


async def _write(stdin: asyncio.StreamWriter, text: str) -> None:
    stdin.write(text.encode())
    await stdin.drain()
    stdin.close()


async def _scan(
    stdout: asyncio.StreamReader, paths: dict[str, str], redactor: Redactor
) -> Finding | None:
    overlap = max(redactor.longest - 1, 0)
    for _ in range(len(paths)):
        header = (await stdout.readline()).decode(errors="replace").split()
        if len(header) != 3:  # `<sha> missing`: not ours to judge (the push will fail)
            continue
        sha, kind, size = header[0], header[1], int(header[2])
        tail = b""
        found: str | None = None
        left = size
        while left > 0:
            chunk = await stdout.readexactly(min(left, READ_BYTES))
            left -= len(chunk)
            if found is None:
                found = redactor.contains_secret(tail + chunk)
                tail = (tail + chunk)[-overlap:] if overlap else b""
        await stdout.readexactly(1)  # the newline after each object
        if found is not None:
            return Finding(found, _where(sha, kind, paths.get(sha, ""), redactor))
    return None


def _where(sha: str, kind: str, path: str, redactor: Redactor) -> str:
    if kind == "commit":
        return f"the message or author of commit {sha[:12]}"
    # A file's very name may hold the value: the path is shown redacted.
    named = redactor.redact(path) if path else "(the top directory)"
    return f"{'the file' if kind == 'blob' else 'the directory'} {named}"
