"""docs/deploy.md's commands create every Secret, and every key of one, that the
manifests name, from the env file /setup writes; a pod given them starts with the
App's settings. The block runs in bash with `kubectl` standing for the real one's
`--dry-run=client` (kubectl_secrets.py: the real kubectl where it is on PATH)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from area_fixtures import rsa_private_key_pem
from ballet.settings import load_settings
from ballet.setup.envfile import update_env_file
from kubectl_secrets import real_kubectl

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY = REPO_ROOT / "docs" / "deploy.md"
MANIFESTS = REPO_ROOT / "manifests"
HELPER = REPO_ROOT / "tests" / "kubectl_secrets.py"
MARKER = "<!-- tests/deploy/test_secret_commands.py runs this block -->"


def documented_block() -> str:
    text = DEPLOY.read_text()
    assert MARKER in text, "docs/deploy.md lost the Secrets' commands this test runs"
    block = re.search(r"```sh\n(.*?)```", text[text.index(MARKER) :], re.DOTALL)
    assert block is not None
    return block.group(1)


def secret_references() -> Iterator[tuple[str, str, str | None]]:
    """(manifest, Secret name, key or None for a whole secretRef) for every reference."""
    for path in sorted(MANIFESTS.rglob("*.y*ml")):
        if path.name.startswith("secret"):
            continue
        for document in yaml.safe_load_all(path.read_text()):
            for found in _walk(document):
                yield (path.name, *found)


def _walk(node: Any) -> Iterator[tuple[str, str | None]]:
    if isinstance(node, dict):
        if isinstance(node.get("secretRef"), dict):
            yield node["secretRef"]["name"], None
        if isinstance(node.get("secretKeyRef"), dict):
            yield node["secretKeyRef"]["name"], node["secretKeyRef"]["key"]
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


@pytest.fixture
def secrets(tmp_path: Path) -> tuple[dict[str, dict[str, str]], str]:
    """The Secrets the documented block creates from a /setup env file, and its key."""
    pem = rsa_private_key_pem()
    update_env_file(
        tmp_path / ".ballet-data" / "github-app.env",
        {
            "BALLET_APP_ID": "123456",
            "BALLET_PRIVATE_KEY": pem,
            "BALLET_GITHUB_API_URL": "https://api.github.com",
            "BALLET_PUBLIC_URL": "https://ballet.example.com",
            "BALLET_WEBHOOK_SECRET": "0f3c9a7e5d1b",
        },
    )
    bin_dir, out = tmp_path / "bin", tmp_path / "secrets"
    bin_dir.mkdir()
    out.mkdir()
    stand_in = bin_dir / "kubectl"
    stand_in.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{HELPER}" "$@"\n')
    stand_in.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "BALLET_TEST_KUBECTL": real_kubectl() or "",
        "BALLET_TEST_SECRETS": str(out),
    }
    assert shutil.which("openssl"), "the documented commands use openssl rand"
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", documented_block()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    made = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    return made, pem


def test_the_documented_commands_create_every_secret_the_manifests_name(
    secrets: tuple[dict[str, dict[str, str]], str],
) -> None:
    made, _ = secrets
    references = list(secret_references())
    assert {name for _, name, _ in references} >= {"ballet", "ballet-valkey"}
    for manifest, name, key in references:
        assert name in made, f"{manifest} names Secret {name}, which docs/deploy.md never creates"
        if key is not None:
            assert key in made[name], f"{manifest} needs key {key} of Secret {name}"


def test_the_ballet_secret_starts_web_and_worker(
    secrets: tuple[dict[str, dict[str, str]], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made, pem = secrets
    for name in list(os.environ):
        if name.startswith("BALLET_") or name == "REDIS_URL":
            monkeypatch.delenv(name)
    for name, value in made["ballet"].items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    assert settings.app_id == 123456
    assert settings.private_key_pem() == pem
    # manifests/web.yaml's read-only root cannot generate the cookies' key.
    assert "readOnlyRootFilesystem: true" in (MANIFESTS / "web.yaml").read_text()
    assert settings.web_session_secret is not None
    assert settings.redis_url is not None
    redis = urlsplit(settings.redis_url.get_secret_value())
    assert redis.password == made["ballet-valkey"]["password"]
    assert (redis.hostname, redis.port) == ("valkey", 6379)
