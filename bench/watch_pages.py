"""Benchmark Ballet's pages end to end on the sandbox stack (web, worker, Valkey).

- live: a ticket's implement agent (a `command` runtime in a real bwrap
  session) prints `--lines` lines, each carrying the time it was printed, at
  `--rate` a second; a client connected to the session page's server-sent
  events (`…/live`) receives them. Latency: from the agent's print to the line
  in the client's hands — capture, redaction, the Redis stream, the SSE
  endpoint and HTTP. Target p50 <= 250 ms.
- finished page: the same session's finished log replaced by a `--log-mb` MiB
  log, then its page (the whole log rendered into the HTML) fetched `--reads`
  times: time to the first byte and to the whole page. Target first byte
  <= 100 ms.

The repository is public, so no sign-in is needed (access is still asked of
GitHub, cached a minute as for any reader).

Its repositories set `policy: {merge: auto}` (demo.LANDS_ALONE_YML): tickets land
with no person's approval, so the figures are Ballet's alone.

    .venv/bin/python bench/watch_pages.py [--lines 300] [--rate 50] [--log-mb 20]
                                          [--reads 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from ballet.core.record import Record
from ballet.demo import repo as demo
from ballet.demo.run import file_ticket
from ballet.demo.stack import Stack, running_stack
from ballet.demo.watch import look
from ballet.queue import connect
from ballet.sessionlog.store import SessionLogs

MIB = 2**20


def agent(lines: int, rate: float) -> str:
    return f"""\
import subprocess, sys, time

time.sleep(3)  # time for the client to connect to the live page
for i in range({lines}):
    print(f"bench-line {{i}} {{time.time():.6f}}", flush=True)
    time.sleep({1 / rate})
sys.exit(subprocess.run([sys.executable, ".ballet/agent.py"], check=False).returncode)
"""


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def until(
    stack: Stack, repo: str, number: int, what: str, check: Callable[[Record], bool]
) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rec = (await look(stack, repo, number)).record
        if rec is not None and check(rec):
            return
        await asyncio.sleep(0.1)
    raise SystemExit(f"timed out waiting for {what}")


async def live_latencies(stack: Stack, url: str, lines: int) -> list[float]:
    got: list[float] = []
    async with httpx.AsyncClient(timeout=None) as client, client.stream("GET", url) as response:
        response.raise_for_status()
        event = ""
        async for raw in response.aiter_lines():
            if raw.startswith("event: "):
                event = raw.removeprefix("event: ")
            elif raw.startswith("data: ") and event == "lines":
                now = time.time()
                for line in json.loads(raw.removeprefix("data: ")):
                    words = line["text"].split()
                    if words[:1] == ["bench-line"]:
                        got.append((now - float(words[2])) * 1000)
            elif raw.startswith("data: ") and event == "end":
                break
            if len(got) >= lines:
                break
    return got


def big_log(size: int) -> bytes:
    line = b"step %d: ran `pytest -q tests/test_calc.py` (exit 0) and read calc.py\n"
    out = bytearray()
    i = 0
    while len(out) < size:
        out += line % i
        i += 1
    return bytes(out[:size])


async def page_timings(url: str, reads: int) -> tuple[list[float], list[float], int]:
    first: list[float] = []
    whole: list[float] = []
    size = 0
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(reads):
            start = time.perf_counter()
            async with client.stream("GET", url) as response:
                response.raise_for_status()
                body = response.aiter_bytes()
                chunk = await anext(body)
                first.append((time.perf_counter() - start) * 1000)
                size = len(chunk) + sum([len(c) async for c in body])
            whole.append((time.perf_counter() - start) * 1000)
    return first, whole, size


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        async with running_stack(Path(tmp)) as stack:
            # `policy: {merge: auto}`: the ticket lands with no person's approval.
            yml = demo.LANDS_ALONE_YML.replace(
                "runtimes:\n",
                "runtimes:\n  bench: {adapter: command, command: [python3, .ballet/bench.py]}\n",
            ).replace(
                "- {id: implement, kind: agent,", "- {id: implement, kind: agent, runtime: bench,"
            )
            request = demo.new_repo_request("bench-watch", ballet_yml=yml)
            files = request["files"]
            assert isinstance(files, dict)
            files[".ballet/bench.py"] = agent(args.lines, args.rate)
            repo = (await stack.create_repo(request))["full_name"]
            number = await file_ticket(
                stack, repo, demo.ISSUE_TITLE, demo.ISSUE_BODY, demo.AUTHOR, ()
            )
            await until(
                stack,
                repo,
                number,
                "the session to run",
                lambda rec: rec.status == "running" and rec.pr_number is not None,
            )
            page = f"{stack.web_url}/tickets/{repo}/{number}/sessions/implement/1/1"
            latencies = await live_latencies(stack, page + "/live?after=0-0", args.lines)
            await until(stack, repo, number, "the merge", lambda rec: rec.status == "done")

            url = stack.settings.redis_url
            assert url is not None
            pool = await connect(url.get_secret_value())
            logs = SessionLogs.from_settings(stack.settings, pool)
            job_key = f"{repo}#{number}:implement:1:1"
            finished = await logs.read(job_key)
            assert finished is not None
            await logs.finish(job_key, big_log(args.log_mb * MIB), finished.steps)
            first, whole, size = await page_timings(page, args.reads)
            await pool.aclose()

    print(f"live: {len(latencies)} lines from the agent's print to an SSE client")
    print(
        f"  p50 {statistics.median(latencies):.1f} ms, p90 {pct(latencies, 90):.1f} ms,"
        f" p99 {pct(latencies, 99):.1f} ms, max {max(latencies):.1f} ms (target p50 <= 250 ms)"
    )
    html = f"{size / MIB:.1f} MiB of HTML"
    print(f"finished page of a {args.log_mb} MiB log ({html}), {args.reads} reads")
    print(
        f"  first byte p50 {statistics.median(first):.1f} ms, max {max(first):.1f} ms"
        f" (target <= 100 ms); whole page p50 {statistics.median(whole):.0f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--log-mb", type=int, default=20)
    parser.add_argument("--reads", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
