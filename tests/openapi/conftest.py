"""GitHub's published OpenAPI description, fetched from npm once and cached.

`@octokit/openapi` is the package GitHub's own SDKs are generated from. The
version is pinned so a CI run is repeatable; raise it on purpose to learn what
GitHub changed. The tarball lands in `.cache/openapi/` of the checkout
(git-ignored) and is reused by later runs.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest
from schema_walk import Spec

PACKAGE = "@octokit/openapi"
VERSION = "23.0.2"
MEMBER = "package/generated/api.github.com.json"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "openapi"


def _fetch() -> Path:
    target = CACHE / f"api.github.com-{VERSION}.json"
    if target.is_file():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    # The suite's processes each ask for it at once on a fresh checkout: one fetches,
    # the others wait for it (each packing into one directory read a half-written tarball).
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():
            _pack_into(target)
    return target


def _pack_into(target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"npm is needed to fetch {PACKAGE}@{VERSION} (GitHub's OpenAPI description)")
    with tempfile.TemporaryDirectory(dir=CACHE) as packed:
        done = subprocess.run(
            [npm, "pack", f"{PACKAGE}@{VERSION}", "--silent", "--pack-destination", packed],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.fail(f"npm pack {PACKAGE}@{VERSION} failed: {done.stderr.strip()[-500:]}")
        tarball = Path(packed) / done.stdout.strip().splitlines()[-1]
        with tarfile.open(tarball) as tar:
            member = tar.extractfile(MEMBER)
            assert member is not None, f"{MEMBER} missing from {tarball.name}"
            partial = target.with_suffix(".part")
            partial.write_bytes(member.read())
            partial.rename(target)


@pytest.fixture(scope="session")
def github_spec() -> Spec:
    doc: dict[str, Any] = json.loads(_fetch().read_text())
    return Spec(doc)
