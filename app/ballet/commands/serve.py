"""`ballet serve`: the web app and a worker in one process, one event loop.

Without REDIS_URL it runs an embedded Valkey that keeps its data under
BALLET_DATA_DIR and stops with it; SIGINT or SIGTERM stops everything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Iterator

import structlog

from ballet.embedded_valkey import EmbeddedValkeyError, embedded_valkey
from ballet.local_secret import with_local_webhook_secret
from ballet.process import (
    Component,
    add_address_arguments,
    add_env_file_argument,
    fail,
    prepare,
    require_session_sandbox,
    run_until_signalled,
)
from ballet.queue import QueueUnavailable, redis_settings
from ballet.services import build_services
from ballet.sessions.confine import SandboxUnavailable
from ballet.settings import Settings, SettingsError
from ballet.web import create_app
from ballet.web.server import ServerFailed, WebServer
from ballet.worker import WorkerGroup

log = structlog.get_logger("ballet")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_address_arguments(parser)
    add_env_file_argument(parser)


@contextlib.contextmanager
def _queue_url(settings: Settings) -> Iterator[str]:
    if settings.redis_url is not None:
        yield settings.redis_url.get_secret_value()
        return
    with embedded_valkey(settings.data_dir) as url:
        yield url


def run(args: argparse.Namespace) -> int:
    try:
        settings, secret_file = with_local_webhook_secret(prepare(args))
        if settings.redis_url is not None:  # refused if malformed, before anything starts
            redis_settings(settings.redis_url.get_secret_value())
        require_session_sandbox(settings)
    except (SettingsError, ValueError, SandboxUnavailable) as exc:
        return fail(str(exc))
    try:
        with _queue_url(settings) as url:
            app = create_app(settings, url)
            components: list[Component] = [
                WebServer(app, args.host, args.port),
                WorkerGroup(settings, url, build_services),
            ]
            if secret_file is not None:
                log.warning(
                    "no BALLET_WEBHOOK_SECRET set: using the generated secret in"
                    f" {secret_file}; give the same secret to your GitHub App's webhook"
                )
            log.info("ballet serving", url=f"http://{args.host}:{args.port}/webhooks")
            asyncio.run(run_until_signalled(components))
    except EmbeddedValkeyError as exc:
        return fail(str(exc))
    except (QueueUnavailable, ServerFailed) as exc:
        return fail(str(exc), code=1)
    return 0
