"""A `ballet worker` process that notes when each agent process starts and ends,
and (BENCH_PHASES=1) every step `timeline.install()` wraps, for bench/transitions.py.

Each note is a JSON line appended to $BENCH_TIMELINE as it happens:
`{"run": [start, end]}` or `{"span": [name, start, end]}`, in `time.monotonic()`
seconds. Linux's monotonic clock is one clock for every process of the machine,
so the bench compares these with its own times. Otherwise it is `ballet worker`
unchanged: the bench starts it with `worker_env`, as the e2e tests start theirs.

    BENCH_TIMELINE=/tmp/t.jsonl python bench/timed_worker.py
    BENCH_PROFILE=/tmp/worker.prof ...   # and its CPU profile, written as it stops
"""

from __future__ import annotations

import cProfile
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import timeline
from ballet.cli import main
from ballet.sessions import process, runner

# Open for the process's life, line-buffered: the bench reads it while this runs.
_out = Path(os.environ["BENCH_TIMELINE"]).open("a", buffering=1)  # noqa: SIM115
_real_run_process = process.run_process


def _note(entry: dict[str, Any]) -> None:
    _out.write(json.dumps(entry) + "\n")


async def _timed_run_process(argv: Sequence[str], **kwargs: Any) -> process.ProcessOutcome:
    start = time.monotonic()
    outcome = await _real_run_process(argv, **kwargs)
    _note({"run": [start, time.monotonic()]})
    return outcome


class _NotedSpans(list[timeline.Span]):
    def append(self, span: timeline.Span) -> None:
        _note({"span": [span.name, span.start, span.end]})


def _profiled(path: str) -> int:
    """`ballet worker` under cProfile, timed by this process's CPU clock: what the
    worker's own Python costs, unmoved by other processes on a busy machine."""
    profile = cProfile.Profile(time.process_time)
    try:
        return profile.runcall(main, ["worker"])
    finally:
        profile.dump_stats(path)


if __name__ == "__main__":
    runner.run_process = _timed_run_process  # type: ignore[attr-defined]
    if os.environ.get("BENCH_PHASES") == "1":
        timeline.SPANS = _NotedSpans()
        timeline.install()
    profile_to = os.environ.get("BENCH_PROFILE")
    sys.exit(_profiled(profile_to) if profile_to else main(["worker"]))
