"""What the setup tests share: `ballet serve` with no App beside a sandbox, and waiting."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: Callable[[], object], what: str, log: Path, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if check():
                return
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen; log:\n{log.read_text()}")


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[BackgroundSandbox]:
    with BackgroundSandbox(tmp_path / "sandbox") as running:
        yield running


@dataclass(frozen=True)
class Served:
    url: str
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes]


@contextlib.contextmanager
def serving(tmp_path: Path, sandbox: BackgroundSandbox) -> Iterator[Served]:
    """`ballet serve` with no App, in a process of its own, stopped by SIGTERM after."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BALLET_", "REDIS_URL"))}
    env |= {
        "BALLET_GITHUB_API_URL": sandbox.api_url,
        "BALLET_DATA_DIR": str(tmp_path / "data"),
        "BALLET_WRITE_SPACING_SECONDS": "0",
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ballet", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{url}/healthz").status_code == 200, "serve up", log)
        yield Served(url, tmp_path / "data", log, process)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def serve(tmp_path: Path, sandbox: BackgroundSandbox) -> Iterator[tuple[str, Path, Path]]:
    """`ballet serve` with no App: (its URL, its data dir, its log)."""
    with serving(tmp_path, sandbox) as served:
        yield served.url, served.data_dir, served.log
