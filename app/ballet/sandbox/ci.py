"""The repository's CI: its command run in a fresh checkout of each pushed commit.

Reported as a check suite with one check run named `ci`, with the command's
output in the run's `output.text` (its tail in the summary of a failure, its
workflow commands as annotations: ci_output), and the webhooks GitHub would send.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from ballet.sandbox import ci_output, events
from ballet.sandbox.state import CheckRun, CheckSuite, Repo, Sandbox

CHECK_NAME = "ci"
# GitHub's limit on output.text; the tail is what explains a failure.
MAX_OUTPUT = 65535


def start(sb: Sandbox, repo: Repo, sha: str, branch: str | None, before: str | None) -> None:
    """Create the suite and run, announce them, and run the command in the background."""
    if repo.ci_command is None:
        return
    now = datetime.now(UTC)
    suite = CheckSuite(
        sb.next_id(), sha, branch, before, now, now, status="in_progress", origin="ci"
    )
    run = CheckRun(sb.next_id(), suite.id, CHECK_NAME, sha, now, status="in_progress")
    repo.suites[suite.id] = suite
    repo.runs[run.id] = run
    events.check_run(sb, repo, run, "created")
    task = asyncio.create_task(_run(sb, repo, suite, run, list(repo.ci_command)))
    sb.tasks.add(task)
    task.add_done_callback(sb.tasks.discard)


async def _run(sb: Sandbox, repo: Repo, suite: CheckSuite, run: CheckRun, argv: list[str]) -> None:
    tmp = tempfile.mkdtemp(prefix="sandbox-ci-")
    try:
        workdir = Path(tmp) / "checkout"
        conclusion, text = await _checkout(repo.path, run.head_sha, workdir)
        if conclusion is None:
            conclusion, text = await _execute(argv, workdir, sb.ci_timeout_seconds)
    finally:
        # Off the event loop: removing a checkout was 6% of the busy sandbox's loop.
        await asyncio.to_thread(shutil.rmtree, tmp)
    now = datetime.now(UTC)
    run.status, run.conclusion, run.completed_at = "completed", conclusion, now
    run.output = {
        "title": f"CI {conclusion}",
        "summary": ci_output.summary(argv, conclusion, text),
        "text": text[-MAX_OUTPUT:],
    }
    run.annotations = ci_output.workflow_annotations(text)
    suite.status, suite.conclusion, suite.updated_at = "completed", conclusion, now
    events.check_run(sb, repo, run, "completed")
    events.check_suite(sb, repo, suite, "completed")


async def _checkout(bare: Path, sha: str, workdir: Path) -> tuple[str | None, str]:
    for argv in (
        ["git", "clone", "--quiet", "--shared", "--no-checkout", str(bare), str(workdir)],
        ["git", "-C", str(workdir), "checkout", "--quiet", "--detach", sha],
    ):
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            return "failure", f"checkout failed: {out.decode(errors='replace')}"
    return None, ""


async def _execute(argv: list[str], cwd: Path, timeout: float) -> tuple[str, str]:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a timeout kills all of it
            env={**os.environ, "CI": "true"},
        )
    except OSError as exc:
        return "failure", f"could not start {argv[0]!r}: {exc}"
    # Read as it comes, so the output before a timeout is kept for the report.
    chunks: list[bytes] = []

    async def pump() -> None:
        assert proc.stdout
        while chunk := await proc.stdout.read(65536):
            chunks.append(chunk)

    reader = asyncio.create_task(pump())
    try:
        await asyncio.wait_for(proc.wait(), timeout)
        timed_out = False
    except TimeoutError:
        timed_out = True
    finally:
        # Also ends whatever the command left running (which would hold its output open),
        # and the command itself when the sandbox shuts down mid-run.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()
    await reader
    out = b"".join(chunks).decode(errors="replace")
    if timed_out:
        return "timed_out", out + f"\n[killed after {timeout:g}s]"
    return ("success" if proc.returncode == 0 else "failure"), out
