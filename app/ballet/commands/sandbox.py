"""`ballet sandbox serve`: GitHub on loopback for end-to-end tests and the demo.

Prints one JSON line when ready, `{"api_url", "env_file"}`; the env file makes
`ballet serve --env-file FILE` talk to this sandbox as its GitHub.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
import tempfile
from pathlib import Path

import structlog

from ballet.demo import run as demo_command
from ballet.sandbox.app import new_sandbox
from ballet.sandbox.server import bind, url_of, uvicorn_server, write_credentials


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="sandbox_command", metavar="SUBCOMMAND", required=True)
    serve = sub.add_parser("serve", help="serve the GitHub double on loopback")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    serve.add_argument(
        "--data",
        type=Path,
        help="directory for repositories and credentials (default: a new temporary directory)",
    )
    serve.add_argument("--webhook-url", help="where to deliver webhooks (Ballet's web app)")
    serve.add_argument("--app-id", type=int, default=1, help="the App's id (default 1)")
    serve.add_argument(
        "--token-ttl",
        type=float,
        default=3600,
        help="seconds an installation token lives (default 3600)",
    )
    serve.add_argument(
        "--ci-timeout",
        type=float,
        default=600,
        help="seconds a CI command may run before it is killed (default 600)",
    )
    serve.add_argument(
        "--webhooks-at-once",
        type=int,
        default=1,
        help="deliveries posted at once (default 1: one at a time, in the order made)",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="least severe event logged to stderr (default info: every delivery)",
    )
    demo = sub.add_parser(
        "demo", help="run the whole product offline, from labelled issue to merged PR"
    )
    demo_command.add_arguments(demo)


def run(args: argparse.Namespace) -> int:
    if args.sandbox_command == "serve":
        return serve(args)
    if args.sandbox_command == "demo":
        return demo_command.run(args)
    return 2


def serve(args: argparse.Namespace) -> int:
    # Progress (deliveries, failures) goes to stderr: stdout carries only the ready line.
    # A bench's thousands of deliveries need not be rendered one by one: --log-level warning.
    structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[args.log_level.upper()]
        ),
    )
    data: Path = args.data or Path(tempfile.mkdtemp(prefix="ballet-sandbox-"))
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(
            f"ballet sandbox: cannot listen on {args.host}:{args.port}: {exc}; "
            "choose another --port or stop what uses it",
            file=sys.stderr,
        )
        return 1
    sandbox = new_sandbox(
        data / "git",
        url_of(sock),
        args.webhook_url,
        app_id=args.app_id,
        token_ttl_seconds=args.token_ttl,
        ci_timeout_seconds=args.ci_timeout,
        webhooks_at_once=args.webhooks_at_once,
    )
    env_file = write_credentials(sandbox, data)
    server = uvicorn_server(sandbox)

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.01)
        if server.started:
            print(json.dumps({"api_url": sandbox.base_url, "env_file": str(env_file)}), flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a person stops it
        asyncio.run(main())
    return 0
