"""A private key that is not one stops `ballet worker` and `ballet serve` at start, in
one line naming the setting and the shape expected: it used to start and end in three
chained tracebacks at GitHub's first call, which read as GitHub being down."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from area_fixtures import rsa_private_key_pem
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from test_web_serve import SECRET, env_without_settings

SHAPE = "-----BEGIN RSA PRIVATE KEY----- to -----END RSA PRIVATE KEY-----"


def _start(command: str, tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    env = env_without_settings(
        BALLET_WEBHOOK_SECRET=SECRET,
        BALLET_APP_ID="123",
        BALLET_DATA_DIR=str(tmp_path / "data"),
        # Never reached: the key is checked before anything connects.
        REDIS_URL="redis://127.0.0.1:1/0",
        **settings,
    )
    return subprocess.run(
        [sys.executable, "-m", "ballet", command, *(["--port", "0"] if command == "serve" else [])],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_clear_line(done: subprocess.CompletedProcess[str], setting: str) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(f"ballet: {setting}")
    assert SHAPE in lines[0] and "PKCS#8" in lines[0]
    return lines[0]


@pytest.mark.parametrize("command", ["worker", "serve"])
def test_a_key_cut_short_is_refused_naming_the_setting(command: str, tmp_path: Path) -> None:
    cut = "\n".join(rsa_private_key_pem().splitlines()[:5])  # a copy and paste that stopped
    line = _one_clear_line(_start(command, tmp_path, BALLET_PRIVATE_KEY=cut), "BALLET_PRIVATE_KEY")
    assert "is not a private key" in line
    assert cut.splitlines()[1] not in line  # the key itself is never shown


def test_a_key_file_of_another_kind_is_refused_naming_the_file(tmp_path: Path) -> None:
    pem = tmp_path / "app.pem"
    pem.write_bytes(
        ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    done = _start("worker", tmp_path, BALLET_PRIVATE_KEY_PATH=str(pem))
    line = _one_clear_line(done, f"the file BALLET_PRIVATE_KEY_PATH names ({pem})")
    assert "GitHub Apps sign with RSA" in line


def test_serve_checks_the_key_setup_saved_too(tmp_path: Path) -> None:
    # `ballet serve` reads BALLET_DATA_DIR/github-app.env, where /setup saved the App.
    data = tmp_path / "data"
    data.mkdir()
    (data / "github-app.env").write_text("BALLET_APP_ID=123\nBALLET_PRIVATE_KEY=not-a-key\n")
    done = _start("serve", tmp_path)
    _one_clear_line(done, "BALLET_PRIVATE_KEY")
