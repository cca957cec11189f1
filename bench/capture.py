"""Benchmark: what capturing a session's whole output costs, side by side in one run.

A session process prints `--megabytes` MB to stdout as fast as it can, in 1 MB
writes (`--shape text`: log lines of ~60 bytes; `--shape events`: ~1 KB JSON
events, as an agent CLI prints them). It runs under `sessions.process.run_process`
as the runner runs it (unconfined: confinement is a constant of its own,
bench/confinement.py), its stdout lines going to a usage meter, in each of:

- without: today's path before session logs, the bounded head/tail captures and
  the meter's line splitter only;
- null sink: a `SessionLog` too (every line redacted against a session's
  secrets and every token pattern, kept within its 20 MB cap, rendered as
  steps) handing its lines to a NullSink, and its `finish`;
- list sink: the same, to a sink that makes every `LogLine` and keeps it, as a
  real sink must read them;
- valkey: the same, to a real Valkey stream on loopback (the live tail of
  sessionlog/live.py, pipelined XADDs), with `--valkey`.

Alternating rounds, `--runs` each: medians and mins, each against `without`'s
(goal ≤ 1.1×), the CPU time the worker's side spent (the event loop that reads
the pipes and runs the capture: what throttles the session through the pipe's
backpressure), how many lines reached the sink live (the rest skipped it: it had fallen behind
by MAX_PENDING_LINES, capture.py) and the machine's load average.
Run: .venv/bin/python bench/capture.py [--runs N] [--megabytes N] [--shape text|events] [--valkey]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path

from ballet.embedded_valkey import embedded_valkey
from ballet.sessionlog.capture import SessionLog
from ballet.sessionlog.clis import renderer_for
from ballet.sessionlog.live import LiveTail
from ballet.sessionlog.sink import LogLine, LogSink, NullSink
from ballet.sessionlog.steps import Step
from ballet.sessions.process import run_process
from ballet.sessions.redaction import session_redactor
from ballet.sessions.runtimes.base import UsageMeter
from ballet.sessions.runtimes.claude_code import ClaudeMeter
from redis.asyncio import Redis

PRINTER = """
import json, sys
shape, total = sys.argv[1], int(sys.argv[2]) * 1024 * 1024
if shape == "text":
    line = "%08d step ok: compiled src/ballet/module.py in 12 ms, 0 warnings\\n"
else:
    event = {"type": "assistant", "message": {"id": "msg_%08d", "content": [
        {"type": "text", "text": "I look at the tests and run them. " * 24}]}}
    line = json.dumps(event).replace("%", "%%").replace("msg_%%08d", "msg_%08d") + "\\n"
out, written, n = sys.stdout.buffer, 0, 0
while written < total:
    block = "".join(line % (n + i) for i in range(1000)).encode()
    n += 1000
    while block and written < total:
        piece = block[: 1024 * 1024]
        out.write(piece)
        written += len(piece)
        block = block[len(piece):]
out.flush()
"""


class ListSink:
    """Reads every line it is given, as any sink that stores them must."""

    def __init__(self) -> None:
        self.lines = 0

    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None:
        self.lines += sum(1 for _ in lines)

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None:
        return None


class ValkeySink:
    """The live tail on a real Valkey stream (sessionlog/live.py); the object store's
    part (finish) is left out: it runs once per session, after it."""

    def __init__(self, url: str) -> None:
        self.redis = Redis.from_url(url)
        self.tail = LiveTail(self.redis)
        self.lines = 0

    async def append(self, job_key: str, lines: Sequence[LogLine]) -> None:
        await self.tail.append(job_key, lines)
        self.lines += len(lines)

    async def finish(self, job_key: str, log: bytes, steps: Sequence[Step]) -> None:
        await self.tail.end(job_key, time.time())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--shape", choices=("text", "events"), default="text")
    parser.add_argument("--valkey", action="store_true", help="also a real Valkey stream")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="ballet-bench-") as scratch,
        _valkey(args.valkey, Path(scratch)) as url,
    ):
        asyncio.run(_bench(Path(scratch), args.runs, args.megabytes, args.shape, url))


@contextlib.contextmanager
def _valkey(wanted: bool, scratch: Path) -> Iterator[str | None]:
    if not wanted:
        yield None
        return
    with embedded_valkey(scratch / "valkey") as url:
        yield url


async def _bench(scratch: Path, runs: int, megabytes: int, shape: str, url: str | None) -> None:
    script = scratch / "printer.py"
    script.write_text(PRINTER)
    argv = [sys.executable, str(script), shape, str(megabytes)]
    env = {"PATH": os.environ["PATH"]}
    # A session's secrets as a real one has them: two declared keys, the git token.
    worker = {"ANTHROPIC_API_KEY": "sk-ant-api03-" + "Xy12Zw34Ab56" * 8, "EXTRA": "v" * 40}
    redactor = session_redactor(worker, ("ANTHROPIC_API_KEY", "EXTRA"), "ghs_" + "T0k3n" * 8)
    adapter = "claude-code" if shape == "events" else "command"
    # The adapter's own meter: Claude Code's reads every JSON line, `command`'s nothing.
    meter: Callable[[], UsageMeter] = ClaudeMeter if shape == "events" else UsageMeter
    counted: dict[str, int] = {}

    async def without() -> None:
        outcome = await run_process(
            argv, cwd=scratch, env=env, timeout_seconds=300, on_stdout_line=meter().feed_line
        )
        assert outcome.exit_code == 0, outcome.output_tail(2000)
        counted["printed"] = outcome.stdout.total_bytes

    # Per case: lines the sink got live (with the notes of lines skipped), lines logged.
    streamed: dict[str, tuple[int, int]] = {}

    def logged(name: str, make: Callable[[], LogSink]) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            sink = make()
            log = SessionLog("bench#1:implement:1:1", redactor, sink=sink,
                             renderer=renderer_for(adapter))  # fmt: skip
            log.start()
            log.ballet("session started (bench)")
            outcome = await run_process(
                argv, cwd=scratch, env=env, timeout_seconds=300,
                on_stdout_line=meter().feed_line, log=log,
            )  # fmt: skip
            finished = await log.finish("session ended (bench)")
            assert outcome.exit_code == 0
            counted["kept"] = len(finished.log)
            counted["steps"] = len(finished.steps)
            if isinstance(sink, ListSink | ValkeySink):
                streamed[name] = (sink.lines, log.lines)

        return run

    cases: dict[str, Callable[[], Awaitable[None]]] = {
        "without": without,
        "null sink": logged("null sink", NullSink),
        "list sink": logged("list sink", ListSink),
    }
    if url is not None:
        cases["valkey"] = logged("valkey", lambda: ValkeySink(url))
    load = os.getloadavg()[0]
    times, cpu = await _interleaved(cases, runs)
    base, base_min = statistics.median(times["without"]), min(times["without"])
    mb = counted["printed"] / 1e6
    print(
        f"a session printing {mb:.0f} MB ({shape}), {runs} alternating runs each:"
        f" kept {counted['kept'] / 1e6:.1f} MB, {counted['steps']} steps;"
        f" load average {load:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print("  case        median      ratio   min         ratio   worker CPU (median)")
    for name, values in times.items():
        median, least = statistics.median(values), min(values)
        live = ""
        if name in streamed:
            live = "   live: {} of {} lines".format(*streamed[name])
        print(
            f"  {name:<10} {median * 1000:6.0f} ms   {median / base:4.2f}×   "
            f"{least * 1000:6.0f} ms   {least / base_min:4.2f}×   "
            f"{statistics.median(cpu[name]) * 1000:6.0f} ms{live}"
        )
    print("  goal: ≤ 1.1× without")
    print(json.dumps({name: [round(v, 4) for v in values] for name, values in times.items()}))


async def _interleaved(
    cases: dict[str, Callable[[], Awaitable[None]]], runs: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each case's wall times, and the CPU time this process (the worker's side: the
    event loop reading the pipes and the capture) spent in each."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for case in cases.values():  # warm the page cache and the interpreter's imports
        await case()
    for _ in range(runs):
        for name, case in cases.items():
            started, used = time.perf_counter(), time.process_time()
            await case()
            times[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - used)
    return times, cpu


if __name__ == "__main__":
    main()
