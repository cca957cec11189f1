"""`ballet worker`: only a worker, serving both queues; run as many as you need."""

from __future__ import annotations

import argparse
import asyncio

from ballet.process import add_env_file_argument, fail, prepare, run_until_signalled
from ballet.queue import QueueUnavailable, redis_settings
from ballet.services import build_services
from ballet.settings import SettingsError
from ballet.worker import WorkerGroup


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env_file_argument(parser)
    parser.add_argument(
        "--burst",
        action="store_true",
        help="run the queued jobs, then exit when the queues are empty",
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = prepare(args)
        url = settings.require_redis_url()
        redis_settings(url)
    except (SettingsError, ValueError) as exc:
        return fail(str(exc))
    group = WorkerGroup(settings, url, build_services, burst=args.burst)
    try:
        asyncio.run(run_until_signalled([group]))
    except QueueUnavailable as exc:
        return fail(str(exc), code=1)
    return 0
