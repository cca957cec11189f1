"""A file out of an npm package's tarball, fetched once per checkout and cached.

GitHub publishes its API descriptions on npm (`@octokit/openapi`,
`@octokit/graphql-schema`); the tests check Ballet and the sandbox against them.
Pinned versions keep a CI run repeatable. The file lands under `.cache/` of the
checkout (git-ignored) and is reused by later runs.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest


def npm_file(package: str, version: str, member: str, target: Path, what: str) -> Path:
    """`member` of `package@version`'s tarball, at `target`; `what` names it in errors."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # The suite's processes each ask for it at once on a fresh checkout: one fetches,
    # the others wait for it (each packing into one directory read a half-written tarball).
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():
            _pack_into(package, version, member, target, what)
    return target


def _pack_into(package: str, version: str, member: str, target: Path, what: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"npm is needed to fetch {package}@{version} ({what})")
    with tempfile.TemporaryDirectory(dir=target.parent) as packed:
        done = subprocess.run(
            [npm, "pack", f"{package}@{version}", "--silent", "--pack-destination", packed],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.fail(f"npm pack {package}@{version} failed: {done.stderr.strip()[-500:]}")
        tarball = Path(packed) / done.stdout.strip().splitlines()[-1]
        with tarfile.open(tarball) as tar:
            found = tar.extractfile(member)
            assert found is not None, f"{member} missing from {tarball.name}"
            partial = target.with_suffix(".part")
            partial.write_bytes(found.read())
            partial.rename(target)
