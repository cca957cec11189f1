"""`ballet worker` and `ballet serve` at start-up: which session limits they can
enforce, logged; a limit the operator set that they cannot, refused (exit 2) saying
what to change; nonsense in a limit's setting refused with what to write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from starting_output import NO_REDIS, output_until_no_redis

SECRET = "limits-test-secret-value"


def env_with(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BALLET_", "REDIS_URL"))}
    return env | {
        "BALLET_WEBHOOK_SECRET": SECRET,
        "REDIS_URL": NO_REDIS,  # nothing listens: the start ends after the checks
        "BALLET_DATA_DIR": str(tmp_path / "data"),
        **settings,
    }


# The worker started where every cgroup hierarchy is read-only to it (its own mount
# namespace, /sys/fs/cgroup/* remounted read-only): what a worker without a writable
# cgroup (an unprivileged one, a container without a cgroup of its own) finds.
WITHOUT_CGROUPS = (
    'for d in /sys/fs/cgroup/*/; do mount -o remount,bind,ro "$d" || exit 3; done; exec "$@"'
)


def argv_of(command: str, *, cgroups: bool = True) -> list[str]:
    ballet = [sys.executable, "-m", "ballet", command]
    if cgroups:
        return ballet
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        WITHOUT_CGROUPS,
        "sh",
        *ballet,
    ]


def start(
    command: str, env: dict[str, str], *, cgroups: bool = True
) -> subprocess.CompletedProcess[str]:
    argv = argv_of(command, cgroups=cgroups)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def started_output(command: str, env: dict[str, str], *, cgroups: bool = True) -> str:
    """What `ballet COMMAND` prints until it first fails to reach the Redis on port 1."""
    return output_until_no_redis(argv_of(command, cgroups=cgroups), env)


def test_a_limit_the_worker_cannot_enforce_is_refused_at_start(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to take the worker's cgroups away in a mount namespace")
    env = env_with(
        tmp_path,
        BALLET_SESSION_ISOLATION="none",  # the limits' check alone, not bwrap's
        BALLET_SESSION_MAX_MEMORY="1GiB",
        BALLET_SESSION_MAX_PROCESSES="256",
    )
    for command in ("worker", "serve"):
        done = start(command, env, cgroups=False)
        assert done.returncode == 2, done.stderr
        assert "BALLET_SESSION_MAX_MEMORY, BALLET_SESSION_MAX_PROCESSES set" in done.stderr
        assert "run the worker as root where cgroup v1 is mounted" in done.stderr
        assert "systemd `Delegate=yes`" in done.stderr and "or unset" in done.stderr
        assert "Traceback" not in done.stderr
    # Unset, it starts (and meets no Redis on port 1), warning of what it cannot limit.
    del env["BALLET_SESSION_MAX_MEMORY"], env["BALLET_SESSION_MAX_PROCESSES"]
    output = started_output("worker", env, cgroups=False)
    assert "redis connection error" in output  # it got past every check
    assert "BALLET_SESSION_MAX" not in output
    assert "session limits: memory: not limited per session" in output
    assert "session limits: processes: not limited per session" in output


def test_the_limits_a_worker_enforces_are_logged_at_start(tmp_path: Path) -> None:
    output = started_output("worker", env_with(tmp_path, BALLET_SESSION_ISOLATION="none"))
    assert "session limits" in output
    if os.geteuid() == 0:  # this machine: cgroup v1 writable, tmpfs mountable
        assert "memory='4 GiB (cgroup v" in output
        assert "disk='8 GiB (a tmpfs per session" in output
        assert "processes='512 (cgroup v" in output


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("BALLET_SESSION_MAX_MEMORY", "lots", "'lots' is not a size; write a number and a unit"),
        ("BALLET_SESSION_MAX_DISK", "8", "'8' has no unit; write e.g. 8MiB or 8GiB"),
        ("BALLET_SESSION_MAX_MEMORY", "1MiB", "'1MiB' is too small; write at least 16 MiB"),
        ("BALLET_SESSION_MAX_CPUS", "0", "greater than or equal to 0.01"),
        ("BALLET_SESSION_MAX_PROCESSES", "many", "valid integer"),
    ],
)
def test_nonsense_in_a_limit_is_refused_saying_what_to_write(
    tmp_path: Path, variable: str, value: str, says: str
) -> None:
    done = start("worker", env_with(tmp_path, **{variable: value}))
    assert done.returncode == 2, done.stderr
    assert variable in done.stderr and says in done.stderr
