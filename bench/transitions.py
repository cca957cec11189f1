"""Transition overhead: from a session's report to the next session's process start,
and from labelling to the merge, for the four instant stages of the demo.

Starts the whole product on loopback (the `ballet sandbox demo` stack, worker in
this process) and runs demo tickets one after another, each in its own
repository. The bench wraps `run_process` (the one place a session's agent
process is spawned) to note when each agent process starts and ends; a
transition is the time from one agent's end (its report is written) to the
next agent's start of the same ticket: reading the report, pushing, the
SessionFinished job, the engine, the GitHub writes, the session job, the clone.

Prints p50/p90 per transition (implement→review, review→verify) and of
label→merged (verify's end → merge is the integrate stage, no process; the merge
is when the sandbox answered the App's merge request, from its request log), with
write pacing off (as in the sandbox) or on (`--spacing 1`, GitHub's pace).
`--worker-process` runs the worker as a `ballet worker` process of its own
(bench/timed_worker.py), as deployed, instead of in the sandbox's process;
`--direct-python` keeps a pyenv shim (~170 ms a start here) out of the agents'
and the sandbox CI's `python3`. `--apart` runs the web app and the sandbox as
processes of their own too (`ballet web`, `ballet sandbox serve`), as deployed,
instead of sharing this process's GIL.
`--phases` also prints where a transition's time goes: the bench wraps the steps
between two agent processes (push, the SessionFinished job, each effect, the
session job, the workspace, each git command, the sandbox) and prints, per
transition, each step's median start (ms after the agent's end) and duration.

Its repositories set `policy: {merge: auto}` (demo.LANDS_ALONE_YML): tickets land
with no person's approval, so the figures are Ballet's alone.

    .venv/bin/python bench/transitions.py [--tickets 5] [--spacing 0] [--poll 0.2] [--phases]
        [--worker-process] [--direct-python] [--apart] [--profile worker.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import direct_python
import timeline
from ballet.demo import repo as demo
from ballet.demo.run import file_ticket
from ballet.demo.stack import Stack, process_env, running_stack, worker_env
from ballet.demo.watch import View, wait_until
from ballet.logs import configure_logging
from ballet.sessions import process, runner
from redis.asyncio import Redis

# --profile: where the worker process writes its CPU profile (bench/timed_worker.py).
PROFILE_TO: str | None = None
# (start, end) of every agent process, in the order they ran; tickets run one at a time.
RUNS: list[tuple[float, float]] = []
_real_run_process = process.run_process


async def _timed_run_process(argv: Sequence[str], **kwargs: Any) -> process.ProcessOutcome:
    start = time.monotonic()
    outcome = await _real_run_process(argv, **kwargs)
    RUNS.append((start, time.monotonic()))
    return outcome


@contextmanager
def _timed_worker(
    stack: Stack, notes: Path, phases: bool, overrides: dict[str, Any]
) -> Iterator[None]:
    """`bench/timed_worker.py` on the stack: a `ballet worker` noting its agents' runs."""
    env = process_env(worker_env(stack.settings))
    env.update(BENCH_TIMELINE=str(notes), BENCH_PHASES="1" if phases else "0")
    if PROFILE_TO is not None:
        env["BENCH_PROFILE"] = PROFILE_TO
    if "queue_poll_seconds" in overrides:
        env["BALLET_QUEUE_POLL_SECONDS"] = str(overrides["queue_poll_seconds"])
    script = Path(__file__).with_name("timed_worker.py")
    with (notes.parent / "worker.log").open("wb") as log:
        proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=log, stderr=log)
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _read_notes(notes: Path) -> None:
    for line in notes.read_text().splitlines():
        entry = json.loads(line)
        if "run" in entry:
            RUNS.append((entry["run"][0], entry["run"][1]))
        else:
            name, start, end = entry["span"]
            timeline.SPANS.append(timeline.Span(name, start, end))


async def _requests(stack: Stack) -> list[dict[str, Any]]:
    """The sandbox's log of the App's requests, wherever the sandbox runs."""
    if stack.sandbox is not None:
        return list(stack.sandbox.sandbox.requests)
    async with stack.admin() as client:
        response = await client.get("/_sandbox/requests")
        response.raise_for_status()
        logged: list[dict[str, Any]] = response.json()
        return logged


def _merged_at(requests: list[dict[str, Any]], repo: str) -> float:
    """When the sandbox answered the App's merge of the ticket's PR (its request log)."""
    merges = [
        r["time"]
        for r in requests
        if r["method"] == "PUT"
        and r["path"].startswith(f"/repos/{repo}/pulls/")
        and r["path"].endswith("/merge")
        and r["status"] == 200
    ]
    return float(max(merges))


def _answering(requests: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """When the sandbox was answering one of the App's requests (REST or git over
    HTTP), as merged (start, end) intervals on the machine's monotonic clock."""
    spans = sorted((r["began"], r["ended"]) for r in requests)
    merged_spans: list[tuple[float, float]] = []
    for start, end in spans:
        if merged_spans and start <= merged_spans[-1][1]:
            merged_spans[-1] = (merged_spans[-1][0], max(end, merged_spans[-1][1]))
        else:
            merged_spans.append((start, end))
    return merged_spans


def _covered(spans: list[tuple[float, float]], start: float, end: float) -> float:
    """How much of [start, end] the (merged, disjoint) spans cover, in seconds."""
    return sum(max(0.0, min(e, end) - max(s, start)) for s, e in spans)


async def _commands(stack: Stack) -> dict[str, int]:
    """Valkey's count of each command so far (INFO commandstats), every process's."""
    client = Redis.from_url(stack.settings.require_redis_url())
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


def _per_ticket(
    before: dict[str, int], after: dict[str, int], tickets: int
) -> list[tuple[str, float]]:
    counts = {name: (n - before.get(name, 0)) / tickets for name, n in after.items()}
    return sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: -kv[1])


def merged(view: View) -> bool:
    pull, record = view.pull, view.record
    return pull is not None and bool(pull["merged"]) and record is not None


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(
    tickets: int,
    spacing: float,
    data: Path,
    overrides: dict[str, Any],
    phases: bool,
    worker_process: bool,
    apart: bool,
) -> None:
    runner.run_process = _timed_run_process  # type: ignore[attr-defined]
    if phases and not worker_process:
        timeline.install()
    walls: list[float] = []  # label → the App's merge request answered
    noticed: list[float] = []  # label → the bench saw the PR merged
    starts: list[float] = []  # when each ticket was filed
    notes = data / "timeline.jsonl"
    # Apart: the web app and the sandbox as processes of their own, as deployed (the
    # sandbox stands in for GitHub, elsewhere), not one process sharing its GIL.
    logs = {"web_log": data / "web.log", "sandbox_log": data / "sandbox.log"} if apart else {}
    async with running_stack(
        data, write_spacing_seconds=spacing, worker=not worker_process, **logs, **overrides
    ) as stack:
        commands_before = await _commands(stack)
        with _timed_worker(stack, notes, phases, overrides) if worker_process else nullcontext():
            for index in range(1, tickets + 1):
                # `policy: {merge: auto}`: lands with no person's approval to wait for.
                request = demo.new_repo_request(f"t-{index}", ballet_yml=demo.LANDS_ALONE_YML)
                created = await stack.create_repo(request)
                repo: str = created["full_name"]
                await asyncio.sleep(1.0)  # let the repository's own install and CI settle
                start, start_wall = time.monotonic(), time.time()
                number = await file_ticket(
                    stack, repo, demo.ISSUE_TITLE, demo.ISSUE_BODY, demo.AUTHOR
                )
                await wait_until(stack, repo, number, merged, timeout=180)
                noticed.append(time.monotonic() - start)
                # To the merge itself, not to the bench's next look (every 0.2 s).
                walls.append(_merged_at(await _requests(stack), repo) - start_wall)
                starts.append(start)
        requests = await _requests(stack)
        commands = _per_ticket(commands_before, await _commands(stack), tickets)
    if worker_process:
        _read_notes(notes)
    # Tickets run one at a time: a ticket's agents are those that ran while it did.
    per_ticket = [
        sorted(r for r in RUNS if s <= r[0] <= s + w) for s, w in zip(starts, noticed, strict=True)
    ]
    where = "in a `ballet worker` process of its own" if worker_process else "in this process"
    others = "web and sandbox each a process of its own" if apart else "web and sandbox in this one"
    print(f"worker {where}; {others}; sessions' python3 is {shutil.which('python3')}")
    gaps: dict[str, list[float]] = defaultdict(list)
    own: dict[str, list[float]] = defaultdict(list)  # the gap less GitHub's time in it
    answering = _answering(requests)
    names = ("implement→review", "review→verify")
    for runs in per_ticket:
        for name, (_, end), (start, _) in zip(names, runs, runs[1:], strict=False):
            gaps[name].append((start - end) * 1000)
            own[name].append((start - end - _covered(answering, end, start)) * 1000)
    print(f"{tickets} tickets, write spacing {spacing}s, {overrides or 'default settings'}")
    print(f"{'transition':<22} {'p50 ms':>8} {'p90 ms':>8} {'n':>3}   Ballet's own: p50 / p90 ms")
    for name in names:
        values, mine = gaps[name], own[name]
        if values:
            print(
                f"{name:<22} {pct(values, 0.5):>8.0f} {pct(values, 0.9):>8.0f} {len(values):>3}"
                f"   {pct(mine, 0.5):>6.0f} / {pct(mine, 0.9):.0f}"
            )
    print(
        "  (Ballet's own: the gap less the time in it that GitHub's double was answering"
        " one of the App's requests, git's included)"
    )
    print(
        f"{'label→merged (s)':<22} {statistics.median(walls):>8.2f} {pct(walls, 0.9):>8.2f} "
        f"{len(walls):>3}"
    )
    seen = statistics.median(noticed)
    print(f"  (the bench saw the merge at {seen:.2f} s: it looks every 0.2 s)")
    top = ", ".join(f"{name} {count:.0f}" for name, count in commands[:12])
    print(f"Redis commands a ticket, all processes: {sum(c for _, c in commands):.0f} ({top})")
    if phases:
        print(_label_to_merged(per_ticket, starts, walls))
        # The ticket's start as a zero-length "agent" before implement's: label → implement.
        labelled = [[(s, s), *runs] for s, runs in zip(starts, per_ticket, strict=True)]
        print(
            timeline.breakdown(
                ("label→implement", *names),
                labelled,
                lambda start, end: _covered(answering, start, end),
            )
        )


def _label_to_merged(
    per_ticket: list[list[tuple[float, float]]], starts: list[float], walls: list[float]
) -> str:
    """Label → merged, in parts: to the first agent, the agents, the transitions, the
    integrate stage (the last agent's end → merged: checks, then the merge)."""
    parts: dict[str, list[float]] = defaultdict(list)
    for runs, start, wall in zip(per_ticket, starts, walls, strict=True):
        if not runs:
            continue
        parts["label → first agent"].append(runs[0][0] - start)
        parts["agents running"].append(sum(end - begin for begin, end in runs))
        parts["between agents"].append(sum(b[0] - a[1] for a, b in itertools.pairwise(runs)))
        parts["last agent → merged"].append(start + wall - runs[-1][1])
    lines = ["\nlabel→merged, in parts (median s)"]
    lines += [f"  {name:<34} {statistics.median(v):>6.2f}" for name, v in parts.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=5)
    parser.add_argument("--spacing", type=float, default=0.0, help="write spacing, seconds")
    parser.add_argument(
        "--poll", type=float, default=None, help="BALLET_QUEUE_POLL_SECONDS: the fallback, seconds"
    )
    parser.add_argument("--phases", action="store_true", help="print each step's timing")
    parser.add_argument(
        "--worker-process",
        action="store_true",
        help="run the worker as its own process (as deployed), not beside the sandbox",
    )
    parser.add_argument(
        "--direct-python",
        action="store_true",
        help="put this interpreter's own directory first on PATH (no pyenv shim per start)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        help="with --worker-process: write the worker's CPU profile (cProfile) to this file",
    )
    parser.add_argument(
        "--apart",
        action="store_true",
        help="run the web app and the sandbox as processes of their own (as deployed)",
    )
    args = parser.parse_args()
    PROFILE_TO = args.profile
    configure_logging("warning")
    if args.direct_python:
        direct_python.put_first_on_path()
    extra: dict[str, Any] = {} if args.poll is None else {"queue_poll_seconds": args.poll}
    with tempfile.TemporaryDirectory(prefix="ballet-bench-") as tmp:
        asyncio.run(
            main(
                args.tickets,
                args.spacing,
                Path(tmp),
                extra,
                args.phases,
                args.worker_process,
                args.apart,
            )
        )
