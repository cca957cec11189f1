"""One `ballet serve` per data dir, and `ballet stats` reading its embedded Valkey
with nothing set: real serve processes, real Valkey."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from test_web_serve import (
    SECRET,
    env_without_settings,
    free_port,
    kill_if_running,
    launch,
    wait_for,
)


def _ballet(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ballet", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_second_serve_on_one_data_dir_names_the_first_and_stats_reads_its_valkey(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    env = env_without_settings(
        BALLET_WEBHOOK_SECRET=SECRET, BALLET_DATA_DIR=str(data), BALLET_SESSION_ISOLATION="none"
    )
    port = free_port()
    log = tmp_path / "first.log"
    first = launch("serve", port, env, log)
    try:
        ready = f"http://127.0.0.1:{port}/readyz"
        wait_for(lambda: httpx.get(ready).status_code == 200, "readyz", log)

        second = _ballet("serve", "--port", str(free_port()), env=env)
        assert second.returncode == 1, second.stderr
        assert f"another ballet serve (pid {first.pid}) is using the data dir" in second.stderr
        assert "BALLET_DATA_DIR" in second.stderr
        assert "embedded valkey started" not in second.stderr  # refused before any Valkey
        assert httpx.get(ready).status_code == 200

        # No REDIS_URL: stats finds the running serve's Valkey, password and all.
        stats = _ballet("stats", env=env)
        assert stats.returncode == 0, stats.stderr
        assert "no finished stage runs in the records" in stats.stdout
        # The address alone (what the log shows) is refused by Valkey: said, no traceback.
        address = urlsplit((data / "valkey" / "url").read_text().strip())
        bare = {**env, "REDIS_URL": f"redis://{address.hostname}:{address.port}/0"}
        refused = _ballet("stats", env=bare)
        assert refused.returncode == 1
        assert "Redis refused ballet stats" in refused.stderr
        assert "Traceback" not in refused.stderr

        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0
    finally:
        kill_if_running(first)
    assert not (data / "valkey" / "url").exists()
    stopped = _ballet("stats", env=env)
    assert stopped.returncode == 2
    assert "no `ballet serve` runs an embedded Valkey on" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    # The data dir is free again.
    again = launch("serve", port, env, tmp_path / "again.log")
    try:
        wait_for(lambda: httpx.get(ready).status_code == 200, "readyz", tmp_path / "again.log")
    finally:
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=30)
        kill_if_running(again)
