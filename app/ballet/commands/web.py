"""`ballet web`: only the webhook web app, for scaling out beside `ballet worker`."""

from __future__ import annotations

import argparse
import gc

import structlog

from ballet.commands.lifecycle import (
    add_address_arguments,
    add_env_file_argument,
    fail,
    prepare,
    run_until_signalled,
)
from ballet.settings import SettingsError
from ballet.web import create_app
from ballet.web.limits import connection_limits
from ballet.web.server import ServerFailed, WebServer, run_event_loop

log = structlog.get_logger("ballet")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_address_arguments(parser)
    add_env_file_argument(parser)


def run(args: argparse.Namespace) -> int:
    try:
        # The pages' sign-in comes back to the address served here unless one is set.
        settings = prepare(args).with_listening_address(args.host, args.port)
        app = create_app(settings, settings.require_redis_url())
        server = WebServer(app, args.host, args.port, connection_limits(settings))
    except (SettingsError, ValueError) as exc:
        return fail(str(exc))
    log.info("web app starting", url=f"http://{args.host}:{args.port}/webhooks")
    # What start-up built lives as long as the process: frozen, a full collection
    # no longer walks it (tens of ms each time, felt in the p99 of deliveries).
    gc.freeze()
    try:
        run_event_loop(run_until_signalled([server]))
    except ServerFailed as exc:
        return fail(str(exc), code=1)
    return 0
