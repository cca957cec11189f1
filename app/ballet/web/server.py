"""Serving the web app with uvicorn inside a command's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import structlog
import uvicorn
from starlette.applications import Starlette

from ballet.settings import Settings
from ballet.web.guard import guarded_protocol
from ballet.web.limits import ConnectionLimits, connection_limits

log = structlog.get_logger("ballet.web")

# Requests still running this long after a stop began are cancelled: a delivery cut
# short fails on GitHub and the redelivery sweep asks for it again.
GRACEFUL_STOP_SECONDS = 10


class _Server(uvicorn.Server):
    # The command owns SIGINT/SIGTERM: uvicorn re-raising a captured signal
    # after its shutdown would kill the process before the worker and the
    # embedded Valkey are stopped.
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class ServerFailed(Exception):
    """uvicorn could not serve, e.g. the port is taken; uvicorn logged the cause."""


class WebServer:
    """The web app on uvicorn, as a component of `ballet serve` or `ballet web`, its
    connections held to `limits` (web/guard.py; unset: the settings' defaults)."""

    def __init__(
        self, app: Starlette, host: str, port: int, limits: ConnectionLimits | None = None
    ) -> None:
        limits = limits or connection_limits(Settings.model_construct())
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            lifespan="on",
            http=guarded_protocol(limits),
            backlog=limits.backlog,
            # The guard closes idle connections itself; uvicorn's own timer agrees.
            timeout_keep_alive=math.ceil(limits.idle_seconds),
            timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS,
        )
        self._server = _Server(config)
        self._limits = limits
        self._address = f"{host}:{port}"

    async def run(self) -> None:
        log.info(
            "web connections limited",
            max_connections=self._limits.max_connections,
            backlog=self._limits.backlog,
            idle_seconds=self._limits.idle_seconds,
            body_seconds=self._limits.body_seconds,
        )
        try:
            await self._server.serve()
        except SystemExit:
            # uvicorn exits the process when it cannot bind; let the command stop cleanly.
            raise ServerFailed(
                f"cannot serve on {self._address} (the log above says why):"
                " free the port or pass another --host/--port"
            ) from None

    def stop(self) -> None:
        self._server.should_exit = True


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` to its end on uvloop where it is installed (uvicorn[standard]),
    else on asyncio's own loop: uvloop's transports roughly halve the time the
    web app spends in socket I/O per delivery (docs/performance.md)."""
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None
    try:
        import uvloop
    except ImportError:
        loop_factory = None
    else:
        loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main)
