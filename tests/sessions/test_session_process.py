"""The session process: its group dies with it, its output stays bounded, it beats."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from ballet.sessions.capture import DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES
from ballet.sessions.process import run_process
from session_helpers import alive


def path_only() -> dict[str, str]:
    """A session-like environment: PATH and nothing else (read per test, not at import)."""
    return {"PATH": os.environ["PATH"]}


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


SPAWN_CHILD = """
import subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
open(sys.argv[1], "w").write(str(child.pid))
print("spawned", flush=True)
time.sleep(300)
"""


def test_timeout_kills_the_process_and_the_children_it_spawned(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    outcome = asyncio.run(
        run_process(
            [*python(SPAWN_CHILD), str(pid_file)],
            cwd=tmp_path,
            env=path_only(),
            timeout_seconds=1,
            grace_seconds=0.5,
        )
    )
    assert outcome.timed_out
    assert outcome.exit_code is not None and outcome.exit_code < 0
    assert "spawned" in outcome.stdout.text()
    assert not alive(int(pid_file.read_text()))


def test_children_left_behind_by_a_finished_process_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen(['sleep', '300'], stdout=subprocess.DEVNULL)\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
    )
    outcome = asyncio.run(
        run_process(
            [*python(code), str(pid_file)],
            cwd=tmp_path,
            env=path_only(),
            timeout_seconds=30,
            grace_seconds=0.5,
        )
    )
    assert not outcome.timed_out
    assert outcome.exit_code == 0
    assert not alive(int(pid_file.read_text()))


def test_a_hundred_megabytes_of_output_stay_bounded(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "chunk = b'x' * 1023 + b'\\n'\n"
        "sys.stdout.buffer.write(b'FIRST\\n')\n"
        "for _ in range(100 * 1024): sys.stdout.buffer.write(chunk)\n"
        "sys.stdout.buffer.write(b'LAST\\n')\n"
    )
    lines = 0

    def count(line: bytes) -> None:
        nonlocal lines
        lines += 1

    outcome = asyncio.run(
        run_process(
            python(code), cwd=tmp_path, env=path_only(), timeout_seconds=120, on_stdout_line=count
        )
    )
    assert outcome.exit_code == 0
    assert outcome.stdout.total_bytes == 100 * 1024 * 1024 + 11
    assert outcome.stdout.kept_bytes <= DEFAULT_HEAD_BYTES + DEFAULT_TAIL_BYTES
    text = outcome.stdout.text()
    assert text.startswith("FIRST") and text.rstrip().endswith("LAST")
    assert lines == 100 * 1024 + 2
