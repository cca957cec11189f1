"""Serving the web app with uvicorn inside a command's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import uvicorn
from starlette.applications import Starlette

from ballet.web.coalesce import CoalescingHttpToolsProtocol


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
    """The web app on uvicorn, as a component of `ballet serve` or `ballet web`."""

    def __init__(self, app: Starlette, host: str, port: int) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            lifespan="on",
            http=CoalescingHttpToolsProtocol,
        )
        self._server = _Server(config)
        self._address = f"{host}:{port}"

    async def run(self) -> None:
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
