"""The life of a long-running command: settings, logging, and a clean stop.

`ballet serve`, `ballet web` and `ballet worker` read their settings here
once, then run their components until SIGINT or SIGTERM, when each is asked
to stop and given time to finish what it holds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Protocol

import structlog

from ballet.commands.app_key import check_private_key
from ballet.core.pools import check_pool_name
from ballet.core.session_limits import LIMIT_NAMES
from ballet.logs import configure_logging
from ballet.sessions.confine import UNCONFINED_WARNING, check_bwrap
from ballet.settings import Settings, SettingsError, load_settings
from ballet.wiring import limits_for

log = structlog.get_logger("ballet")

STOP_GRACE_SECONDS = 20.0
PR_SET_DUMPABLE = 4  # <linux/prctl.h>


class Component(Protocol):
    async def run(self) -> None: ...

    def stop(self) -> None: ...


def add_env_file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-file", default=None, help="read settings from this file as well as the environment"
    )


def add_address_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")


def add_pool_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pool",
        action="append",
        default=None,
        metavar="NAME",
        help="an agent pool whose sessions this worker runs; repeat it to serve several,"
        " which then share BALLET_SESSION_SLOTS (default: BALLET_WORKER_POOLS, else `default`)",
    )


def with_pools(settings: Settings, args: argparse.Namespace) -> Settings:
    """The settings with the `--pool`s given, which win over BALLET_WORKER_POOLS."""
    if not args.pool:
        return settings
    try:
        pools = tuple(dict.fromkeys(check_pool_name(p) for p in args.pool))
    except ValueError as exc:
        raise SettingsError(f"--pool: {exc}") from exc
    return settings.model_copy(update={"worker_pools": pools})


def prepare(args: argparse.Namespace) -> Settings:
    """Read the settings and set up logging; raises SettingsError with what to fix."""
    settings = load_settings(args.env_file)
    check_private_key(settings)
    configure_logging(settings.log_level, json=settings.log_json)
    make_undumpable()
    return settings


def make_undumpable() -> None:
    """No process of the same user may read this one's memory or environment
    (/proc/<pid>/mem, /environ) or ptrace it: it holds the App key and tokens.
    Defence in depth behind the sandbox; children are dumpable again after exec."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            log.warning("could not mark the process non-dumpable", errno=ctypes.get_errno())


def require_session_sandbox(settings: Settings) -> None:
    """A worker runs agent sessions: refuse to start when they cannot be confined, or
    held to a limit the operator set (raises SandboxUnavailable saying what to install
    or set), never fall back."""
    if settings.session_isolation == "none":
        log.warning(f"BALLET_SESSION_ISOLATION=none: every {UNCONFINED_WARNING}")
    else:
        check_bwrap()
    plan = limits_for(settings)
    log.info(
        "session limits",
        **{name: f"{plan.values.describe(name)} ({plan.how(name)})" for name in LIMIT_NAMES},
    )
    for warning in plan.warnings:
        log.warning(f"session limits: {warning} (docs/security.md, Resource limits)")


def fail(message: str, code: int = 2) -> int:
    print(f"ballet: {message}", file=sys.stderr)
    return code


@contextlib.contextmanager
def stopped_by_signals(stopping: asyncio.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set `stopping` while the block runs (on the running loop)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    try:
        yield
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def run_until_signalled(
    components: Sequence[Component], stopping: asyncio.Event | None = None
) -> None:
    """Run the components until a signal or until one of them ends, then stop all.
    `stopping`: set by signal handlers the caller keeps for longer (serve's restarts,
    `stopped_by_signals`); without it, this call keeps its own."""
    if stopping is None:
        stopping = asyncio.Event()
        with stopped_by_signals(stopping):
            await _run_until(components, stopping)
    else:
        await _run_until(components, stopping)


async def _run_until(components: Sequence[Component], stopping: asyncio.Event) -> None:
    tasks = [asyncio.create_task(c.run()) for c in components]
    waiter = asyncio.create_task(stopping.wait())
    try:
        await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
        log.info("stopping" if stopping.is_set() else "a component ended; stopping the others")
    finally:
        waiter.cancel()
        for component in components:
            component.stop()
        done, pending = await asyncio.wait(tasks, timeout=STOP_GRACE_SECONDS)
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    for task in done:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            raise error


__all__ = [
    "Component",
    "SettingsError",
    "add_address_arguments",
    "add_env_file_argument",
    "fail",
    "prepare",
    "run_until_signalled",
    "stopped_by_signals",
]
