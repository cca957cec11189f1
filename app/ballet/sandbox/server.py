"""Running the sandbox: in the foreground (the CLI) or on a background thread (tests, demo).

The listening socket is bound before the app is built, so the sandbox knows
its own URL (for `url` fields and clone URLs) even when the port is 0.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn

from ballet.sandbox.app import create_app, new_sandbox
from ballet.sandbox.oauth import public_url
from ballet.sandbox.state import Sandbox


def bind(host: str, port: int) -> socket.socket:
    # Named TCP, not left 0: accepted connections inherit it, and asyncio turns
    # Nagle off (TCP_NODELAY) only on sockets that say they are TCP. Without it an
    # answer's body waited for the client's delayed ACK of its headers on a kept-alive
    # connection: 40 ms on every request after a connection's first, which GitHub
    # does not add and benches counted as Ballet's own time.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}"


def write_credentials(sandbox: Sandbox, directory: Path) -> Path:
    """The App's private key and the env file that points `ballet serve` at this sandbox."""
    directory.mkdir(parents=True, exist_ok=True)
    key_path = directory / "app-private-key.pem"
    key_path.write_bytes(sandbox.app.private_key_pem)
    key_path.chmod(0o600)
    env_path = directory / "sandbox.env"
    lines = [
        f"BALLET_APP_ID={sandbox.app.app_id}",
        f"BALLET_PRIVATE_KEY_PATH={key_path}",
        f"BALLET_WEBHOOK_SECRET={sandbox.app.webhook_secret}",
        f"BALLET_GITHUB_API_URL={sandbox.base_url}",
        "# GitHub's web side (/login/oauth/*) is github.com; the sandbox serves it beside its API.",
        f"BALLET_GITHUB_WEB_URL={sandbox.base_url}",
        "# The App's OAuth client, for signing people in with GitHub.",
        f"BALLET_GITHUB_CLIENT_ID={sandbox.app.client_id}",
        f"BALLET_GITHUB_CLIENT_SECRET={sandbox.app.client_secret}",
        "# The sandbox has no rate limits, so Ballet need not space its writes.",
        "BALLET_WRITE_SPACING_SECONDS=0",
    ]
    public = public_url(sandbox.hooks.url)
    if public is not None:
        # Ballet's own address, as the webhook URL names it; its callback is registered.
        lines.append(f"BALLET_PUBLIC_URL={public}")
    env_path.write_text("\n".join(lines) + "\n")
    env_path.chmod(0o600)
    return env_path


def uvicorn_server(sandbox: Sandbox) -> uvicorn.Server:
    config = uvicorn.Config(create_app(sandbox), log_level="warning", lifespan="on")
    return uvicorn.Server(config)


class BackgroundSandbox:
    """A sandbox serving on a free loopback port from a thread, for the life of a `with`."""

    def __init__(self, data_dir: Path, webhook_url: str | None = None, **options: Any) -> None:
        self._sock = bind("127.0.0.1", 0)
        self.api_url = url_of(self._sock)
        self.sandbox = new_sandbox(data_dir / "git", self.api_url, webhook_url, **options)
        self.env_file = write_credentials(self.sandbox, data_dir)
        self._server = uvicorn_server(self.sandbox)
        self._thread = threading.Thread(target=self._run, name="sandbox", daemon=True)

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._sock]))

    def __enter__(self) -> BackgroundSandbox:
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the sandbox server stopped while starting; see its log")
            threading.Event().wait(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
