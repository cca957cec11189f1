"""A worker whose /proc is masked, as a container runtime masks it, refuses to start
saying that cause and its fix (hostUsers: false with procMount: Unmasked), not the
user-namespace sysctls. Reproduced with the real bwrap: `ballet worker` in a mount
namespace of its own with /proc/kcore covered, as runc and Kubernetes' default
procMount cover it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ballet.sessions.confine.bwrap_failure import why_bwrap_failed

MASKABLE = [p for p in ("/proc/kcore", "/proc/keys", "/proc/timer_list") if os.path.exists(p)]


def _worker_under_masked_proc(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if os.geteuid() != 0:
        pytest.skip("covering /proc in a new mount namespace needs root")
    env = {
        "PATH": os.environ["PATH"],
        "BALLET_DATA_DIR": str(tmp_path),
        # Never reached: the sandbox is checked before the queue.
        "REDIS_URL": "redis://127.0.0.1:1/0",
    }
    mask = f'mount --bind /dev/null {MASKABLE[0]} && exec "$@"'
    unshared = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mask, "sh"]
    return subprocess.run(
        [*unshared, sys.executable, "-m", "ballet", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_worker_under_a_masked_proc_names_it_and_the_fix(tmp_path: Path) -> None:
    result = _worker_under_masked_proc(tmp_path)
    assert result.returncode == 2, result.stderr
    said = result.stderr
    assert "Can't mount proc on /newroot/proc" in said  # bwrap's own words, kept
    assert "/proc is masked" in said
    assert "hostUsers: false" in said and "procMount: Unmasked" in said
    assert "sysctl" not in said and "AppArmor" not in said


def test_other_failures_still_point_at_user_namespaces() -> None:
    said = why_bwrap_failed("bwrap: No permissions to create new namespace", 1)
    assert "unprivileged user namespaces" in said and "procMount" not in said
    unexplained = why_bwrap_failed("", 1)
    assert unexplained.startswith("bubblewrap cannot create a sandbox here (exit code 1)")
