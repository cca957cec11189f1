"""GitHub's published OpenAPI description, fetched from npm once and cached.

`@octokit/openapi` is the package GitHub's own SDKs are generated from. The
version is pinned so a CI run is repeatable; raise it on purpose to learn what
GitHub changed. The tarball lands in `.cache/openapi/` of the checkout
(git-ignored) and is reused by later runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from npm_files import npm_file
from schema_walk import Spec

PACKAGE = "@octokit/openapi"
VERSION = "23.0.2"
MEMBER = "package/generated/api.github.com.json"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "openapi"


def _fetch() -> Path:
    return npm_file(
        PACKAGE,
        VERSION,
        MEMBER,
        CACHE / f"api.github.com-{VERSION}.json",
        "GitHub's OpenAPI description",
    )


@pytest.fixture(scope="session")
def github_spec() -> Spec:
    doc: dict[str, Any] = json.loads(_fetch().read_text())
    return Spec(doc)
