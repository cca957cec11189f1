"""Ballet's git cancelled the way a stopping loop cancels it: every task at once,
asyncio's own pipe-connecting task included. With its output on pipes, Python
3.11 then waits for ever for pipes that never connected (a prepared clone still
being made as the loop ended hung the whole test run); `run_git` writes to
unnamed files instead, so every cancelled git ends.

Run in a child interpreter: a hung loop there fails this test by its timeout
instead of hanging the suite."""

from __future__ import annotations

import subprocess
import sys

SCENARIO = """
import asyncio, os
from pathlib import Path
from ballet.sessions.git import git_environment, run_git

async def main() -> None:
    env = git_environment(os.environ, Path.cwd())
    me = asyncio.current_task()
    hung = 0
    for i in range(30):
        asyncio.create_task(run_git("--version", cwd=None, env=env))
        for _ in range(i % 10):  # cancelled at each step of its start
            await asyncio.sleep(0)
        others = [t for t in asyncio.all_tasks() if t is not me]
        for task in others:
            task.cancel()
        if others:
            _, pending = await asyncio.wait(others, timeout=5)
            hung += len(pending)
    print("hung", hung)
    os._exit(0)  # a hung task must not hold the interpreter at the loop's end

asyncio.run(main())
"""


def test_a_git_cancelled_with_every_task_ends() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["hung", "0"], done.stdout
