"""`ballet worker`: only a worker, serving the events queue and its pools' sessions
queues (`--pool`, default `default`); run as many as you need."""

from __future__ import annotations

import argparse
import asyncio

from prometheus_client import start_http_server

from ballet.commands.lifecycle import (
    add_env_file_argument,
    add_pool_argument,
    fail,
    prepare,
    require_session_sandbox,
    run_until_signalled,
    with_pools,
)
from ballet.jobs.registry import WorkerGroup
from ballet.queue import QueueUnavailable, redis_settings
from ballet.sessionlog.objects import check_log_store
from ballet.sessions.confine import SandboxUnavailable
from ballet.settings import SettingsError
from ballet.wiring import build_services


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env_file_argument(parser)
    add_pool_argument(parser)
    parser.add_argument(
        "--burst",
        action="store_true",
        help="run the queued jobs, then exit when the queues are empty",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus metrics on this port (GET /metrics); off by default",
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = with_pools(prepare(args), args)
        url = settings.require_redis_url()
        redis_settings(url)  # a malformed REDIS_URL is refused before anything starts
        require_session_sandbox(settings)
        # Where session logs go is checked before any job runs (LogStoreConfigError
        # is a ValueError saying what to set).
        check_log_store(settings)
    except (SettingsError, ValueError, SandboxUnavailable) as exc:
        return fail(str(exc))
    if args.metrics_port is not None:
        # A daemon thread: it ends with the process and never blocks the event loop.
        try:
            start_http_server(args.metrics_port)
        except OSError as exc:
            return fail(
                f"cannot serve metrics on port {args.metrics_port}: {exc.strerror};"
                " choose a free port with --metrics-port",
                1,
            )
    group = WorkerGroup(settings, url, build_services, burst=args.burst)
    try:
        asyncio.run(run_until_signalled([group]))
    except QueueUnavailable as exc:
        return fail(str(exc), code=1)
    return 0
