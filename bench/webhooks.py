"""Benchmark POST /webhooks: Ballet against a bare HMAC-checking endpoint and Probot.

wrk drives each server on loopback with signed issues/labeled deliveries, every
request with a delivery id no other request uses (bench/webhooks.lua). In one
run, round after round, it measures:

- floor: a bare Starlette endpoint on uvicorn that only verifies the HMAC;
- ballet: the real `ballet web` on a fresh embedded Valkey configured as in
  production (append-only file, fsync every second), so every delivery is
  verified, deduplicated and enqueued durably before its 202; after each round
  the queue must hold exactly the deliveries wrk saw accepted;
- probot: Probot 13's own Node middleware with an empty `issues.labeled`
  handler (no durable enqueue), when node and npm are present.

It prints req/s, p50 and p99 of every round, then the medians and Ballet's
ratios to the floor and to Probot (targets: >= 0.5x the floor, >= 1.0x Probot,
p99 <= 25 ms). wrk is installed from Debian when missing (as root), Probot from
npm into bench/.cache/probot. With --profile, Ballet runs under py-spy and each
round leaves a flame graph of where its time went.

    .venv/bin/python bench/webhooks.py [--rounds 3] [--duration 5] [--connections 16]
                                        [--profile bench/out/ingress]
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.applications import Starlette

SECRET = "bench-secret"
HERE = Path(__file__).resolve().parent
PAYLOAD = HERE.parent / "tests/fixtures/github-webhooks/issues/labeled.payload.json"
LUA = HERE / "webhooks.lua"
PROBOT_DIR = HERE / ".cache" / "probot"  # .cache/ is ignored by git
PROBOT_VERSION = "13"
DISTINCT_BODIES = 64


def floor_app() -> Starlette:
    """The least a webhook endpoint can do: verify the HMAC and answer 202."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    key = SECRET.encode()

    async def webhook(request: Request) -> JSONResponse:
        body = await request.body()
        expected = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
            return JSONResponse({"error": "signature"}, status_code=401)
        return JSONResponse({"status": "accepted"}, status_code=202)

    return Starlette(routes=[Route("/webhooks", webhook, methods=["POST"])])


# -- tools: wrk from Debian, Probot from npm ------------------------------------------


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit("wrk is missing: install it (e.g. sudo apt-get install wrk) and rerun")
    print("installing wrk from Debian (apt-get)", file=sys.stderr)
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True, env=env)
    found = shutil.which("wrk")
    if not found:
        raise SystemExit("apt-get installed wrk, yet it is not on PATH")
    return found


def ensure_probot() -> Path | None:
    """The directory to run the Probot peer from, or None without node/npm."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        print("node or npm missing: the Probot peer is skipped", file=sys.stderr)
        return None
    if not (PROBOT_DIR / "node_modules" / "probot" / "package.json").exists():
        print(f"installing probot@{PROBOT_VERSION} from npm into {PROBOT_DIR}", file=sys.stderr)
        PROBOT_DIR.mkdir(parents=True, exist_ok=True)
        (PROBOT_DIR / "package.json").write_text('{"name": "probot-peer", "private": true}\n')
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", f"probot@{PROBOT_VERSION}"],
            cwd=PROBOT_DIR,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    # Node resolves `require("probot")` next to the script, so it runs from there.
    shutil.copy(HERE / "probot_peer.js", PROBOT_DIR / "probot_peer.js")
    return PROBOT_DIR


# -- load ------------------------------------------------------------------------------


def write_bodies(directory: Path) -> Path:
    """Distinct signed bodies (the issue number differs) and a manifest for wrk."""
    payload = json.loads(PAYLOAD.read_bytes())
    lines = []
    for number in range(1, DISTINCT_BODIES + 1):
        payload["issue"]["number"] = number
        body = json.dumps(payload).encode()
        path = directory / f"body-{number}.json"
        path.write_bytes(body)
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        lines.append(f"{signature} {path}\n")
    manifest = directory / "manifest.txt"
    manifest.write_text("".join(lines))
    return manifest


@dataclass(frozen=True)
class Result:
    rps: float
    p50_ms: float
    p99_ms: float
    ok: int


def run_wrk(
    wrk: str, url: str, manifest: Path, expected: int, seconds: int, args: argparse.Namespace
) -> Result:
    prefix = uuid.uuid4().hex[:12]
    command = [
        wrk,
        f"-t{args.threads}",
        f"-c{args.connections}",
        f"-d{seconds}s",  # whole seconds: wrk takes no fractions
        "--timeout",
        "10s",
        "-s",
        str(LUA),
        url,
        "--",
        str(manifest),
        prefix,
        str(expected),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    out = done.stdout
    line = next((x for x in out.splitlines() if x.startswith("BENCH ")), None)
    if line is None:
        raise SystemExit(f"wrk printed no result:\n{out}")
    data = json.loads(line.removeprefix("BENCH "))
    if data["unexpected"] or data["socket_errors"]:
        raise SystemExit(
            f"{data['unexpected']} answers were not {expected} and {data['socket_errors']}"
            f" socket errors; first: {data['first_unexpected']}"
        )
    return Result(
        rps=data["requests"] / (data["duration_us"] / 1e6),
        p50_ms=data["p50_us"] / 1000,
        p99_ms=data["p99_us"] / 1000,
        ok=data["ok"],
    )


# -- servers ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nothing listens on port {port}")


@contextmanager
def serving(
    argv: list[str],
    env: dict[str, str],
    cwd: Path | None = None,
    stop: signal.Signals = signal.SIGTERM,
) -> Iterator[int]:
    port = free_port()
    process = subprocess.Popen([*argv, str(port)], env=env, cwd=cwd)
    try:
        wait_until_listening(port, process)
        yield port
    finally:
        process.send_signal(stop)
        process.wait(timeout=60)


def py_spy() -> str:
    """py-spy (pip install py-spy) from PATH or beside this Python."""
    found = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if not found:
        raise SystemExit("--profile needs py-spy: pip install py-spy")
    return found


def measure(
    name: str, port: int, manifest: Path, expected: int, wrk: str, args: argparse.Namespace
) -> tuple[Result, int]:
    """Warm up, then measure; returns the result and how many answers were `expected`."""
    url = f"http://127.0.0.1:{port}/webhooks"
    warm = run_wrk(wrk, url, manifest, expected, args.warmup, args)
    result = run_wrk(wrk, url, manifest, expected, args.duration, args)
    print(
        f"  {name:<7} {result.rps:>8.0f} req/s   p50 {result.p50_ms:6.2f} ms"
        f"   p99 {result.p99_ms:6.2f} ms",
        flush=True,
    )
    return result, warm.ok + result.ok


def ballet_round(
    manifest: Path, wrk: str, base_env: dict[str, str], args: argparse.Namespace
) -> Result:
    """`ballet web` on a fresh embedded Valkey; checks every accepted delivery is queued."""
    import redis
    from ballet.embedded_valkey import embedded_valkey
    from ballet.queue import EVENTS_QUEUE

    with tempfile.TemporaryDirectory() as data, embedded_valkey(Path(data)) as redis_url:
        env = base_env | {"REDIS_URL": redis_url, "BALLET_DATA_DIR": data}
        argv = [sys.executable, "-m", "ballet", "web", "--port"]
        stop = signal.SIGTERM
        if args.profile:
            # py-spy stops sampling and writes its flame graph on SIGINT.
            svg = f"{args.profile}-{len(list(Path().glob(args.profile + '-*.svg'))) + 1}.svg"
            argv = [py_spy(), "record", "--rate", "100", "--output", svg, "--", *argv]
            stop = signal.SIGINT
        with serving(argv, env, stop=stop) as port:
            result, accepted = measure("ballet", port, manifest, 202, wrk, args)
        client = redis.Redis.from_url(redis_url)
        queued = int(client.zcard(EVENTS_QUEUE))  # type: ignore[arg-type]
        persistence: dict[str, int] = client.info("persistence")  # type: ignore[assignment]
        print(
            f"  (valkey: {persistence['rdb_saves']} snapshots, "
            f"{persistence['aof_rewrites']} append-only file compactions during the round)",
            flush=True,
        )
        # wrk stops without reading the answers still in flight (one per connection,
        # in the warm-up and in the run): those deliveries are queued yet uncounted.
        if not accepted <= queued <= accepted + 2 * args.connections:
            raise SystemExit(f"ballet accepted {accepted} deliveries but queued {queued}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5, help="seconds of load per round")
    parser.add_argument("--warmup", type=int, default=1, help="seconds before each")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="wrk threads")
    parser.add_argument("--no-probot", action="store_true", help="skip the Probot peer")
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="run Ballet under py-spy; each round writes PREFIX-<n>.svg (a flame graph)",
    )
    parser.add_argument("--serve-floor", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor:
        import uvicorn

        uvicorn.run(floor_app(), host="127.0.0.1", port=args.serve_floor, log_level="warning")
        return

    wrk = ensure_wrk()
    probot_dir = None if args.no_probot else ensure_probot()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALLET_")}
    env |= {"BALLET_WEBHOOK_SECRET": SECRET, "BALLET_LOG_LEVEL": "warning"}
    env.pop("REDIS_URL", None)
    results: dict[str, list[Result]] = {"floor": [], "ballet": [], "probot": []}
    with tempfile.TemporaryDirectory() as scratch:
        manifest = write_bodies(Path(scratch))
        for number in range(1, args.rounds + 1):
            print(f"round {number}/{args.rounds}", flush=True)
            # One of each per round, so drift in the machine's load hits all alike.
            with serving([sys.executable, __file__, "--serve-floor"], env) as port:
                results["floor"].append(measure("floor", port, manifest, 202, wrk, args)[0])
            results["ballet"].append(ballet_round(manifest, wrk, env, args))
            if probot_dir is not None:
                argv = ["node", "probot_peer.js", SECRET]
                with serving(argv, env, cwd=probot_dir) as port:
                    results["probot"].append(measure("probot", port, manifest, 200, wrk, args)[0])
    report(results, args)


def report(results: dict[str, list[Result]], args: argparse.Namespace) -> None:
    print(
        f"medians of {args.rounds} rounds ({args.duration:g} s each, wrk -t{args.threads}"
        f" -c{args.connections}, {os.cpu_count()} cores)"
    )
    medians: dict[str, float] = {}
    for name, runs in results.items():
        if not runs:
            continue
        medians[name] = statistics.median(r.rps for r in runs)
        p50 = statistics.median(r.p50_ms for r in runs)
        p99 = statistics.median(r.p99_ms for r in runs)
        print(f"  {name:<7} {medians[name]:>8.0f} req/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")
    ballet = medians["ballet"]
    print(f"ratio   ballet / floor  {ballet / medians['floor']:.2f}x (target >= 0.50)")
    if "probot" in medians:
        print(f"ratio   ballet / probot {ballet / medians['probot']:.2f}x (target >= 1.00)")


if __name__ == "__main__":
    main()
