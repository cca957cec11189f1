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
    assert result.returncode == 1
    assert "choose another --port" in result.stderr
