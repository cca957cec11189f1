"""`ballet serve` as a user runs it: a real process, uvicorn, embedded Valkey."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import redis
from area_fixtures import rsa_private_key_pem
from ballet.commands.local_secret import with_local_webhook_secret
from ballet.settings import Settings
from process_namespaces import children
from starting_output import output_until_no_redis
from webhook_signing import delivery_headers

SECRET = "serve-test-secret-value"
HANDLED = 'ballet_deliveries_handled_total{action="labeled",event="issues"} 1.0'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: Callable[[], object], what: str, log: Path, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if check():
                return
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen; log:\n{log.read_text()}")


def env_without_settings(**settings: str) -> dict[str, str]:
    """This environment without Ballet's settings, plus `settings`: only the test's apply."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BALLET_", "REDIS_URL"))}
    return env | settings


def launch(command: str, port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`ballet <command>` as a user starts it, its output going to `log`."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "ballet", command, "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def kill_if_running(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_serve_runs_web_worker_and_embedded_valkey_and_stops_on_sigterm(
    tmp_path: Path, webhooks_dir: Path
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    key = rsa_private_key_pem()  # checked at start: a real one
    env = env_without_settings(
        BALLET_WEBHOOK_SECRET=SECRET,
        BALLET_DATA_DIR=str(tmp_path / "data"),
        BALLET_PRIVATE_KEY=key,
        BALLET_LOG_LEVEL="debug",
    )
    log = tmp_path / "serve.log"
    process = launch("serve", port, env, log)
    try:
        wait_for(lambda: httpx.get(f"{base}/readyz").status_code == 200, "readyz", log)
        valkeys = children(process.pid)
        assert valkeys, "no embedded Valkey process"

        body = (webhooks_dir / "issues" / "labeled.payload.json").read_bytes()
        headers = delivery_headers("issues", body, "serve-1", secret=SECRET)
        answer = httpx.post(f"{base}/webhooks", content=body, headers=headers)
        assert answer.status_code == 202, answer.text
        wait_for(lambda: HANDLED in httpx.get(f"{base}/metrics").text, "handling", log)

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        kill_if_running(process)
    assert all(gone(pid) for pid in valkeys)
    output = log.read_text()
    assert "delivery handled" in output and "serve-1" in output
    assert "embedded valkey stopped" in output
    assert SECRET not in output and key.splitlines()[1] not in output
    # The queue persisted under BALLET_DATA_DIR with an append-only file.
    assert list((tmp_path / "data" / "valkey").glob("appendonlydir/*.aof"))


def test_web_and_worker_refuse_to_start_without_redis_url(tmp_path: Path) -> None:
    env = env_without_settings(BALLET_WEBHOOK_SECRET=SECRET)
    for command in ("web", "worker"):
        done = subprocess.run(
            [sys.executable, "-m", "ballet", command], env=env, capture_output=True, text=True
        )
        assert done.returncode == 2
        assert "REDIS_URL is not set" in done.stderr


def test_serve_without_a_webhook_secret_generates_one_and_keeps_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    first, path = with_local_webhook_secret(settings)
    assert path == tmp_path / "webhook-secret"
    assert path.stat().st_mode & 0o777 == 0o600
    secret = first.require_webhook_secrets()
    assert len(secret[0]) == 64
    again, _ = with_local_webhook_secret(Settings(data_dir=tmp_path))
    assert again.require_webhook_secrets() == secret
    # A configured secret wins and nothing is written.
    configured, none = with_local_webhook_secret(
        Settings(data_dir=tmp_path / "other", webhook_secret=SECRET)
    )
    assert none is None and configured.require_webhook_secrets() == (SECRET,)
    assert not (tmp_path / "other").exists()


def test_serve_on_a_taken_port_says_so_and_leaves_nothing_running(tmp_path: Path) -> None:
    env = env_without_settings(BALLET_WEBHOOK_SECRET=SECRET, BALLET_DATA_DIR=str(tmp_path / "data"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "ballet", "serve", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"cannot serve on 127.0.0.1:{port}" in done.stderr
    assert "embedded valkey stopped" in done.stderr


def test_web_alone_enqueues_on_the_given_redis_and_stops_on_sigterm(
    tmp_path: Path, web_redis_url: str
) -> None:
    queue = redis.Redis.from_url(web_redis_url)
    queue.flushdb()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = env_without_settings(BALLET_WEBHOOK_SECRET=SECRET, REDIS_URL=web_redis_url)
    log = tmp_path / "web.log"
    process = launch("web", port, env, log)
    try:
        wait_for(lambda: httpx.get(f"{base}/readyz").status_code == 200, "readyz", log)
        body = b'{"action": "opened"}'
        headers = delivery_headers("issues", body, "web-1", secret=SECRET)
        assert httpx.post(f"{base}/webhooks", content=body, headers=headers).status_code == 202
        assert queue.zrange("ballet:events", 0, -1) == [b"web-1"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        kill_if_running(process)
        queue.close()


def test_worker_and_serve_refuse_to_start_when_sessions_cannot_be_confined(
    tmp_path: Path,
) -> None:
    # A PATH with git but no bwrap: what a worker image without bubblewrap looks like.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    env = env_without_settings(
        BALLET_WEBHOOK_SECRET=SECRET,
        REDIS_URL="redis://127.0.0.1:1/0",
        BALLET_DATA_DIR=str(tmp_path / "data"),
        PATH=str(bin_dir),
    )
    for command in ("worker", "serve"):
        done = subprocess.run(
            [sys.executable, "-m", "ballet", command], env=env, capture_output=True, text=True
        )
        assert done.returncode == 2, done.stderr
        assert "bubblewrap" in done.stderr and "apt-get install bubblewrap" in done.stderr
        assert "BALLET_SESSION_ISOLATION=none" in done.stderr
    # Opting out explicitly gets past the check, loudly (then finds no Redis on port 1).
    output = output_until_no_redis(
        [sys.executable, "-m", "ballet", "worker"], {**env, "BALLET_SESSION_ISOLATION": "none"}
    )
    assert "redis connection error" in output  # past every check
    assert "bubblewrap" not in output
    assert "UNCONFINED" in output


def test_the_embedded_valkey_starts_under_a_relative_data_dir(tmp_path: Path) -> None:
    # The README's `./run serve` uses the default, relative `.ballet-data`.
    code = (
        "import pathlib, redis\n"
        "from ballet.embedded_valkey import embedded_valkey\n"
        "with embedded_valkey(pathlib.Path('.ballet-data')) as url:\n"
        "    client = redis.Redis.from_url(url, decode_responses=True)\n"
        "    print(client.ping())\n"
        "    print(client.config_get('save') | client.config_get('auto-aof-rewrite-min-size'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "True" in done.stdout.splitlines()
    # Durable in its append-only file alone, compacted rarely (docs/performance.md).
    assert "{'save': '', 'auto-aof-rewrite-min-size': '536870912'}" in done.stdout.splitlines()


def test_a_worker_refuses_to_start_on_a_log_store_it_cannot_use(tmp_path: Path) -> None:
    env = env_without_settings(
        BALLET_WEBHOOK_SECRET=SECRET,
        REDIS_URL="redis://127.0.0.1:1/0",
        BALLET_DATA_DIR=str(tmp_path / "data"),
        BALLET_SESSION_ISOLATION="none",
        BALLET_LOG_STORE="ftp://logs.example/ballet",
    )
    for command in ("worker", "serve"):
        done = subprocess.run(
            [sys.executable, "-m", "ballet", command],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert "BALLET_LOG_STORE" in done.stderr and "Traceback" not in done.stderr
