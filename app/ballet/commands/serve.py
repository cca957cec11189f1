"""`ballet serve`: the web app and a worker in one process, one event loop.

Without REDIS_URL it runs an embedded Valkey that keeps its data under
BALLET_DATA_DIR and stops with it; SIGINT or SIGTERM stops everything. One serve
per data dir: a second one refuses to start, naming the first (serve_lock.py).

Without BALLET_APP_ID it also serves `/setup`, which registers the GitHub App
(ballet.setup) and writes its credentials to the env file: `--env-file`, or
else BALLET_DATA_DIR/github-app.env, which later starts read by themselves.
`/setup` answers only to the one-time setup code serve logs and keeps in
BALLET_DATA_DIR/setup-code until an App is configured.
Once the App is registered, serve restarts its web app and worker with them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import structlog

from ballet.commands.app_key import check_private_key
from ballet.commands.lifecycle import (
    Component,
    add_address_arguments,
    add_env_file_argument,
    add_pool_argument,
    fail,
    prepare,
    require_session_sandbox,
    run_until_signalled,
    stopped_by_signals,
    with_pools,
)
from ballet.commands.local_secret import with_local_webhook_secret
from ballet.commands.serve_lock import DataDirInUse, serving_lock
from ballet.embedded_valkey import EmbeddedValkeyError, embedded_valkey
from ballet.jobs.registry import WorkerGroup
from ballet.queue import QueueUnavailable, redis_settings
from ballet.sessionlog.objects import check_log_store
from ballet.sessions.confine import SandboxUnavailable
from ballet.settings import Settings, SettingsError, load_settings
from ballet.setup.code import CODE_FILE, forget_setup_code, setup_code
from ballet.setup.flow import SetupFlow
from ballet.web import create_app
from ballet.web.limits import connection_limits
from ballet.web.server import ServerFailed, WebServer
from ballet.wiring import build_services

log = structlog.get_logger("ballet")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_address_arguments(parser)
    add_env_file_argument(parser)
    add_pool_argument(parser)


@contextlib.contextmanager
def _queue_url(settings: Settings) -> Iterator[str]:
    if settings.redis_url is not None:
        yield settings.redis_url.get_secret_value()
        return
    with embedded_valkey(settings.data_dir) as url:
        yield url


# Where the setup flow writes the App's credentials when no --env-file is given.
SETUP_ENV_FILE = "github-app.env"


class UntilRegistered:
    """A component that ends when the setup flow registered an App, so that serve
    restarts with its credentials."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.registered = False

    def set(self) -> None:
        self.registered = True
        self._event.set()

    async def run(self) -> None:
        await self._event.wait()

    def stop(self) -> None:
        self._event.set()


def _settings(args: argparse.Namespace) -> tuple[Settings, Path | None, Path]:
    """The settings, the generated webhook secret's file (if used) and the env file
    the setup flow writes to."""
    settings = prepare(args)
    env_file = Path(args.env_file) if args.env_file else settings.data_dir / SETUP_ENV_FILE
    if args.env_file is None and env_file.is_file():
        settings = load_settings(env_file)
        check_private_key(settings)
    settings, secret_file = with_local_webhook_secret(with_pools(settings, args))
    return settings, secret_file, env_file


def run(args: argparse.Namespace) -> int:
    try:
        settings, secret_file, env_file = _settings(args)
        if settings.redis_url is not None:  # refused if malformed, before anything starts
            redis_settings(settings.redis_url.get_secret_value())
        require_session_sandbox(settings)
        check_log_store(settings)
    except (SettingsError, ValueError, SandboxUnavailable) as exc:
        return fail(str(exc))
    try:
        with serving_lock(settings.data_dir), _queue_url(settings) as url:
            asyncio.run(_serve_until_signalled(args, settings, url, secret_file, env_file))
    except (SettingsError, ValueError, EmbeddedValkeyError) as exc:
        return fail(str(exc))
    except (QueueUnavailable, ServerFailed, DataDirInUse) as exc:
        return fail(str(exc), code=1)
    return 0


async def _serve_until_signalled(
    args: argparse.Namespace,
    settings: Settings,
    url: str,
    secret_file: Path | None,
    env_file: Path,
) -> None:
    """Serve, restarting once /setup registered an App, until SIGINT or SIGTERM. One
    loop and its signal handlers for the whole run: a signal as serve restarts, or
    after it, stops it like any other (with a loop per run, the restarted one never
    heard SIGTERM, and a kill left the embedded Valkey running)."""
    stopping = asyncio.Event()
    with stopped_by_signals(stopping):
        while await _serve(args, settings, url, secret_file, env_file, stopping):
            if stopping.is_set():
                return
            log.info("GitHub App registered: restarting with its credentials")
            settings, secret_file, env_file = _settings(args)


async def _serve(
    args: argparse.Namespace,
    settings: Settings,
    url: str,
    secret_file: Path | None,
    env_file: Path,
    stopping: asyncio.Event,
) -> bool:
    """Serve until a signal (False) or until /setup registered an App (True)."""
    until_registered = UntilRegistered()
    setup = None
    if settings.app_id is None:
        code = setup_code(settings.data_dir)
        setup = SetupFlow(
            settings.github_api_url, env_file, code, on_registered=until_registered.set
        )
    else:
        forget_setup_code(settings.data_dir)  # registered (or configured by hand): spent
    # The pages' sign-in comes back to the address served here unless one is set.
    app = create_app(settings.with_listening_address(args.host, args.port), url, setup=setup)
    components: list[Component] = [
        WebServer(app, args.host, args.port, connection_limits(settings)),
        WorkerGroup(settings, url, build_services),
    ]
    if setup is not None:
        components.append(until_registered)
        log.warning(
            f"no GitHub App configured: open http://{args.host}:{args.port}/setup and enter the"
            f" setup code {setup.code} (kept in {settings.data_dir / CODE_FILE}) to register"
            f" one on {setup.web_url}; its credentials will be saved in {env_file}"
        )
    elif secret_file is not None:
        log.warning(
            "no BALLET_WEBHOOK_SECRET set: using the generated secret in"
            f" {secret_file}; give the same secret to your GitHub App's webhook"
        )
    log.info("ballet serving", url=f"http://{args.host}:{args.port}/webhooks")
    await run_until_signalled(components, stopping)
    return until_registered.registered
