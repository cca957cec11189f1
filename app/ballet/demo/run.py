"""`ballet sandbox demo`: the whole product offline, from labelled issue to merge.

It starts a `Stack` (sandbox, Ballet's web app and worker, embedded Valkey),
creates the demo repository, files and labels an issue as a person would,
prints each step as the ticket advances — and the person's step: once the agents
are done Ballet waits for a writer to approve the pull request's head (the
default policy, `merge: approved`), and a maintainer of the demo repository
approves it through the sandbox's REST API, as a person would on GitHub — then
ends with the ticket's timeline: exit 0 when the pull request is merged, 1 when
the ticket stops elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

from ballet.core.landing_approval import awaiting_approval
from ballet.core.record import Record
from ballet.demo import repo as demo_repo
from ballet.demo.stack import Stack, running_stack
from ballet.demo.watch import View, wait_until
from ballet.logs import configure_logging


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data", type=Path, help="where to keep everything (default: a new temporary directory)"
    )
    parser.add_argument(
        "--timeout", type=float, default=120, help="seconds to wait for the merge (default 120)"
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        help="level of Ballet's own log lines between the demo's (default warning)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the sandbox and Ballet running afterwards, to look at the ticket's pages,"
        " until Ctrl-C",
    )


def run(args: argparse.Namespace) -> int:
    data: Path = args.data or Path(tempfile.mkdtemp(prefix="ballet-demo-"))
    configure_logging(args.log_level)
    try:
        return asyncio.run(demo(data, timeout=args.timeout, out=sys.stdout, keep=args.keep))
    except KeyboardInterrupt:
        return 130


async def file_ticket(
    stack: Stack,
    full_name: str,
    title: str,
    body: str,
    author: str,
    labels: tuple[str, ...] = (),
) -> int:
    """File an issue (with `labels`), then label it with the trigger label, as a person does."""
    async with stack.user(author) as user:
        issue = await user.post(
            f"/repos/{full_name}/issues",
            json={"title": title, "body": body, "labels": list(labels)},
        )
        issue.raise_for_status()
        number: int = issue.json()["number"]
        labelled = await user.post(
            f"/repos/{full_name}/issues/{number}/labels", json={"labels": ["ballet"]}
        )
        labelled.raise_for_status()
    return number


class Progress:
    """Prints a line whenever what a person would see of the ticket changes."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._start = time.monotonic()
        self._last: tuple[object, ...] = ()
        self._runs_seen = 0

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self._start:5.1f}s] {text}", file=self._out, flush=True)

    def __call__(self, view: View) -> None:
        record = view.record
        if record is None:
            return
        for run in record.history[self._runs_seen :]:
            if run.end is None:
                break
            self.say(f"  {run.stage} (iteration {run.iteration}) → {run.outcome}")
            self._runs_seen += 1
        now = (record.status, record.stage, record.phase, record.iteration)
        if now == self._last:
            return
        self._last = now
        phase = f", phase {record.phase}" if record.phase else ""
        where = ""
        if record.stage:
            where = f"stage {record.stage} (iteration {record.iteration}{phase})"
        pr = f", PR #{record.pr_number}" if record.pr_number else ""
        self.say(f"{record.status}: {where}{pr}".rstrip(": "))


# Who approves the demo's pull request: a maintainer of the demo repository (admin,
# so with write permission), not the agents and not the issue's author.
APPROVER = "carol"


async def approve_head(stack: Stack, full_name: str, view: View, progress: Progress) -> None:
    """The person's step: say what Ballet waits for, then approve the head as a writer."""
    record, pull = view.record, view.pull
    assert record is not None and record.waiting is not None and pull is not None
    progress.say(f"Ballet waits for a person: {record.waiting.reason}")
    head = pull["head_sha"]
    async with stack.user(APPROVER) as user:
        review = await user.post(
            f"/repos/{full_name}/pulls/{pull['number']}/reviews",
            json={"event": "APPROVE", "commit_id": head, "body": "Read it; ship it."},
        )
        review.raise_for_status()
    progress.say(f"{APPROVER} (maintainer) approved PR #{pull['number']} at {head[:12]}")


def timeline(record: Record) -> str:
    rows = [f"{'stage':<12} {'iter':>4} {'outcome':<18} {'seconds':>8}"]
    for run in record.history:
        seconds = (run.end - run.start).total_seconds() if run.end else float("nan")
        rows.append(
            f"{run.stage:<12} {run.iteration:>4} {run.outcome or 'running':<18} {seconds:>8.1f}"
        )
    return "\n".join(rows)


async def demo(data: Path, *, timeout: float, out: TextIO, keep: bool = False) -> int:
    progress = Progress(out)
    progress.say(f"starting the sandbox, Ballet and Valkey under {data}")
    async with running_stack(data) as stack:
        progress.say(f"sandbox (GitHub) at {stack.api_url}; Ballet at {stack.web_url}")
        code, ticket = await _one_ticket(stack, progress, timeout=timeout, out=out)
        if keep:
            await _kept_up(stack, ticket, progress)
        return code


async def _kept_up(stack: Stack, ticket: tuple[str, int], progress: Progress) -> None:
    """Say where to look, then keep everything up until Ctrl-C (or the task's cancel)."""
    full_name, number = ticket
    progress.say(
        "kept running, until Ctrl-C:\n"
        f"  the ticket's page:  {stack.web_url}/tickets/{full_name}/{number}\n"
        f"  every ticket:       {stack.web_url}/tickets\n"
        f"  the sandbox's API:  {stack.api_url}/repos/{full_name}/pulls?state=all"
        f" and /repos/{full_name}/issues/{number}/comments"
    )
    await asyncio.Event().wait()


async def _one_ticket(
    stack: Stack, progress: Progress, *, timeout: float, out: TextIO
) -> tuple[int, tuple[str, int]]:
    """File the demo's ticket and follow it to its end: (exit code, (repo, issue))."""
    created = await stack.create_repo(demo_repo.new_repo_request())
    full_name = created["full_name"]
    progress.say(f"created {full_name} with a .ballet.yml and a scripted agent")
    number = await file_ticket(
        stack, full_name, demo_repo.ISSUE_TITLE, demo_repo.ISSUE_BODY, demo_repo.AUTHOR
    )
    progress.say(f"{demo_repo.AUTHOR} filed #{number} and labelled it `ballet`")

    def settled(view: View) -> bool:
        pull = view.pull
        record = view.record
        merged = pull is not None and bool(pull["merged"])
        stopped = record is not None and record.status in ("failed", "cancelled")
        waiting = (
            record is not None
            and record.status == "waiting"
            and (record.waiting is not None and record.waiting.kind == "question")
        )
        return (merged and record is not None and record.status == "done") or stopped or waiting

    def decided_or_settled(view: View) -> bool:
        record = view.record
        return settled(view) or (record is not None and awaiting_approval(record))

    deadline = time.monotonic() + timeout
    try:
        view = await wait_until(
            stack, full_name, number, decided_or_settled, timeout=timeout, on_view=progress
        )
        if view.record is not None and awaiting_approval(view.record):
            await approve_head(stack, full_name, view, progress)
            left = max(deadline - time.monotonic(), 1.0)
            view = await wait_until(
                stack, full_name, number, settled, timeout=left, on_view=progress
            )
    except TimeoutError as exc:
        progress.say(
            f"gave up: {exc}; run again with a longer --timeout,"
            " or with --log-level info to see what Ballet did"
        )
        return 1, (full_name, number)
    record = view.record
    assert record is not None
    print("\nTimeline of " + record.key, file=out)
    print(timeline(record), file=out)
    pull = view.pull
    if pull is not None and pull["merged"]:
        progress.say(f"PR #{pull['number']} merged as {pull['merge_commit_sha'][:12]}")
        return 0, (full_name, number)
    progress.say(f"the ticket stopped as {record.status}: {record.waiting}")
    return 1, (full_name, number)
