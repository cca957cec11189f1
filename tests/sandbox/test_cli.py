"""`ballet sandbox serve` as a person runs it: one JSON line when ready, an env file for Ballet."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import jwt


def test_serve_prints_its_url_and_env_file(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ballet",
            "sandbox",
            "serve",
            "--data",
            str(tmp_path),
            "--app-id",
            "77",
            "--webhook-url",
            "http://127.0.0.1:9/hook",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        lines = Path(ready["env_file"]).read_text().splitlines()
        env = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
        assert env["BALLET_WRITE_SPACING_SECONDS"] == "0"
        assert env["BALLET_GITHUB_API_URL"] == ready["api_url"]
        assert env["BALLET_APP_ID"] == "77"
        key = Path(env["BALLET_PRIVATE_KEY_PATH"]).read_bytes()
        now = int(time.time())
        token = jwt.encode({"iss": "77", "iat": now - 30, "exp": now + 300}, key, "RS256")
        app = httpx.get(f"{ready['api_url']}/app", headers={"Authorization": f"Bearer {token}"})
        assert app.status_code == 200
        assert app.json()["id"] == 77
        assert len(env["BALLET_WEBHOOK_SECRET"]) >= 20

        # Sign-in with GitHub: the App's OAuth client, GitHub's web side (the sandbox
        # itself) and Ballet's public URL, whose /oauth/callback is the App's callback.
        assert env["BALLET_PUBLIC_URL"] == "http://127.0.0.1:9"
        assert env["BALLET_GITHUB_WEB_URL"] == ready["api_url"]
        assert env["BALLET_GITHUB_CLIENT_ID"].startswith("Iv23li")
        assert len(env["BALLET_GITHUB_CLIENT_SECRET"]) == 40
        back = httpx.get(
            f"{env['BALLET_GITHUB_WEB_URL']}/login/oauth/authorize",
            params={"client_id": env["BALLET_GITHUB_CLIENT_ID"], "state": "s"},
            headers={"Authorization": "token sandbox-user:mona"},
        )
        assert back.status_code == 302
        assert back.headers["location"].startswith("http://127.0.0.1:9/oauth/callback?code=")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    assert proc.returncode == 0


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "ballet",
                "sandbox",
                "serve",
                "--port",
                str(port),
                "--data",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    assert "choose another --port" in result.stderr
