"""The whole product on loopback: sandbox, Ballet's web app and worker, and Valkey.

`ballet sandbox demo` and the end-to-end tests both run on a `Stack`, so what
the tests prove is what the demo shows. Everything is real: uvicorn serving
both apps over HTTP, the arq worker on a real Valkey, bare git repositories
served over smart HTTP, and agent sessions as real processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ballet.embedded_valkey import embedded_valkey
from ballet.jobs.registry import WorkerGroup
from ballet.sandbox.server import BackgroundSandbox
from ballet.settings import Settings
from ballet.web import create_app
from ballet.web.server import WebServer
from ballet.wiring import build_services


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# A connection idle this long is not used again: the sandbox's server (uvicorn) closes
# one idle for 5 s, and a request sent on it as it closes fails with a ReadError.
KEEP_ALIVE = httpx.Limits(keepalive_expiry=2.0)


@dataclass
class Stack:
    api_url: str
    web_url: str
    settings: Settings
    sandbox: BackgroundSandbox | None  # None: the sandbox is `sandbox_process`
    web_process: subprocess.Popen[bytes] | None = None  # `ballet web`, when run apart
    sandbox_process: subprocess.Popen[bytes] | None = None  # `ballet sandbox serve`, ditto

    def user(self, login: str) -> httpx.AsyncClient:
        """A client acting as a sandbox user through the REST API, as a person would."""
        return httpx.AsyncClient(
            base_url=self.api_url,
            headers={"Authorization": f"token sandbox-user:{login}"},
            timeout=30,
            limits=KEEP_ALIVE,
        )

    def admin(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.api_url, timeout=30, limits=KEEP_ALIVE)

    async def create_repo(self, request: dict[str, Any]) -> dict[str, Any]:
        async with self.admin() as client:
            response = await client.post("/_sandbox/repos", json=request)
            response.raise_for_status()
            created: dict[str, Any] = response.json()
            return created

    async def state(self, full_name: str) -> dict[str, Any]:
        async with self.admin() as client:
            response = await client.get(f"/_sandbox/repos/{full_name}/state")
            response.raise_for_status()
            state: dict[str, Any] = response.json()
            return state

    async def webhooks_waiting(self) -> int:
        """Deliveries the sandbox has made and not yet posted (in process or not)."""
        async with self.admin() as client:
            response = await client.get("/_sandbox/webhook")
            response.raise_for_status()
            return int(response.json()["waiting"])


@dataclass(frozen=True)
class AppIdentity:
    """The sandbox's App as Ballet's settings name it."""

    app_id: int
    private_key: str
    webhook_secret: str
    client_id: str
    client_secret: str


@contextlib.asynccontextmanager
async def running_stack(
    data_dir: Path,
    *,
    redis_url: str | None = None,
    session_slots: int = 2,
    session_egress_allow: tuple[str, ...] = (),
    worker: bool = True,
    write_spacing_seconds: float = 0.0,
    web_log: Path | None = None,
    webhooks_at_once: int = 1,
    sandbox_log: Path | None = None,
    **overrides: Any,
) -> AsyncIterator[Stack]:
    """Start everything under `data_dir`; stop everything when the block ends.

    `session_egress_allow` is BALLET_SESSION_EGRESS_ALLOW (e.g. a model server here).
    `worker=False` leaves the worker out: a test runs `ballet worker` processes of
    its own (`worker_env` gives their environment), to kill them as an OOM would.
    `write_spacing_seconds` paces the App's writes as in production (1.0); other
    keywords are settings too (a benchmark's queue poll). `web_log`: the web app runs
    as a `ballet web` process of its own, logging there, not on this event loop (a
    bench's many watchers and the sandbox here would answer GitHub's webhooks late).
    `webhooks_at_once`: deliveries the sandbox posts at once (1: in order). `sandbox_log`:
    the sandbox runs as a `ballet sandbox serve` process of its own, logging there, and
    is spoken to over HTTP only (on this event loop, its git calls and webhook posts
    competed with a bench's watchers: it fell thousands of webhooks behind)."""
    web_port = free_port()
    web_url = f"http://127.0.0.1:{web_port}"
    with contextlib.ExitStack() as stack:
        url = redis_url or stack.enter_context(embedded_valkey(data_dir / "ballet"))
        sandbox: BackgroundSandbox | None = None
        sandbox_proc: subprocess.Popen[bytes] | None = None
        if sandbox_log is None:
            sandbox = stack.enter_context(
                BackgroundSandbox(
                    data_dir / "sandbox",
                    webhook_url=f"{web_url}/webhooks",
                    webhooks_at_once=webhooks_at_once,
                )
            )
            api_url, identity = sandbox.api_url, _identity_of(sandbox)
        else:
            argv = ["sandbox", "serve", "--data", str(data_dir / "sandbox")]
            argv += ["--webhook-url", f"{web_url}/webhooks", "--log-level", "warning"]
            argv += ["--webhooks-at-once", str(webhooks_at_once)]
            sandbox_proc = stack.enter_context(_ballet_process(argv, {}, sandbox_log))
            api_url, identity = await _sandbox_ready(sandbox_proc, sandbox_log)
        settings = Settings(
            app_id=identity.app_id,
            private_key=identity.private_key,
            webhook_secret=identity.webhook_secret,
            github_api_url=api_url,
            # Ballet's pages, signed in to through the sandbox's OAuth as any of its users.
            public_url=web_url,
            github_web_url=api_url,
            github_client_id=identity.client_id,
            github_client_secret=identity.client_secret,
            redis_url=url,
            data_dir=data_dir / "ballet",
            session_slots=session_slots,
            session_egress_allow=session_egress_allow,
            # The sandbox has no secondary rate limit to respect; a bench may pace anyway.
            write_spacing_seconds=write_spacing_seconds,
            **overrides,
        )
        web: WebServer | None = None
        web_proc: subprocess.Popen[bytes] | None = None
        if web_log is None:
            web = WebServer(create_app(settings, url), "127.0.0.1", web_port)
        else:
            argv = ["web", "--host", "127.0.0.1", "--port", str(web_port)]
            web_proc = stack.enter_context(_ballet_process(argv, web_env(settings), web_log))
        workers = [WorkerGroup(settings, url, build_services)] if worker else []
        tasks = [asyncio.create_task(web.run())] if web is not None else []
        tasks += [asyncio.create_task(w.run()) for w in workers]
        try:
            await _wait_ready(web_url, tasks, web_proc)
            yield Stack(api_url, web_url, settings, sandbox, web_proc, sandbox_proc)
        finally:
            if web is not None:
                web.stop()
            for w in workers:
                w.stop()
            _, pending = await asyncio.wait(tasks, timeout=20) if tasks else (set(), set())
            for task in pending:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


def _identity_of(sandbox: BackgroundSandbox) -> AppIdentity:
    app = sandbox.sandbox.app
    return AppIdentity(
        app.app_id,
        app.private_key_pem.decode(),
        app.webhook_secret,
        app.client_id,
        app.client_secret,
    )


async def _sandbox_ready(proc: subprocess.Popen[bytes], log: Path) -> tuple[str, AppIdentity]:
    """The API URL and App of a starting `ballet sandbox serve`: its ready line (in its
    log, beside its stderr) names the env file it wrote, as `ballet serve` reads it."""
    for _ in range(1200):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith('{"api_url"'):
                ready = json.loads(line)
                text = Path(ready["env_file"]).read_text()
                env = dict(
                    entry.split("=", 1)
                    for entry in text.splitlines()
                    if "=" in entry and not entry.startswith("#")
                )
                identity = AppIdentity(
                    int(env["BALLET_APP_ID"]),
                    Path(env["BALLET_PRIVATE_KEY_PATH"]).read_text(),
                    env["BALLET_WEBHOOK_SECRET"],
                    env["BALLET_GITHUB_CLIENT_ID"],
                    env["BALLET_GITHUB_CLIENT_SECRET"],
                )
                return str(ready["api_url"]), identity
        if proc.poll() is not None:
            raise RuntimeError(f"`ballet sandbox serve` exited ({proc.returncode}); see {log}")
        await asyncio.sleep(0.05)
    raise RuntimeError(f"`ballet sandbox serve` did not become ready; see {log}")


def worker_env(settings: Settings) -> dict[str, str]:
    """The environment of a `ballet worker` process serving this stack."""
    assert settings.private_key is not None and settings.redis_url is not None
    return {
        "BALLET_APP_ID": str(settings.app_id),
        "BALLET_PRIVATE_KEY": settings.private_key.get_secret_value(),
        "BALLET_WEBHOOK_SECRET": ",".join(s.get_secret_value() for s in settings.webhook_secret),
        "BALLET_GITHUB_API_URL": settings.github_api_url,
        "REDIS_URL": settings.redis_url.get_secret_value(),
        "BALLET_DATA_DIR": str(settings.data_dir),
        "BALLET_SESSION_SLOTS": str(settings.session_slots),
        "BALLET_WRITE_SPACING_SECONDS": str(settings.write_spacing_seconds),
        "BALLET_SESSION_AFFINITY_SECONDS": str(settings.session_affinity_seconds),
        "BALLET_RECONCILE_SECONDS": str(settings.reconcile_seconds),
        "BALLET_SESSION_HEARTBEAT_SECONDS": str(settings.session_heartbeat_seconds),
        "BALLET_REDELIVERY_SETTLE_SECONDS": str(settings.redelivery_settle_seconds),
        **({"BALLET_POOLS": settings.pools.render()} if settings.pools.rules else {}),
    }


def web_env(settings: Settings) -> dict[str, str]:
    """The environment of a `ballet web` process serving this stack (its pages too)."""
    env = worker_env(settings)
    for name in ("public_url", "github_web_url", "github_client_id"):
        if (value := getattr(settings, name)) is not None:
            env[f"BALLET_{name.upper()}"] = value
    if settings.github_client_secret is not None:
        env["BALLET_GITHUB_CLIENT_SECRET"] = settings.github_client_secret.get_secret_value()
    return env


async def _wait_ready(
    web_url: str, tasks: list[asyncio.Task[None]], proc: subprocess.Popen[bytes] | None = None
) -> None:
    async with httpx.AsyncClient(base_url=web_url, timeout=2) as client:
        # A process of its own imports the app first: give it longer than a task.
        for _ in range(200 if proc is None else 1200):
            for task in tasks:
                if task.done():
                    task.result()
                    raise RuntimeError("Ballet stopped while starting")
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"`ballet web` exited ({proc.returncode}) while starting")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get("/readyz")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise RuntimeError(f"Ballet at {web_url} did not become ready")


@contextlib.contextmanager
def worker_process(
    stack: Stack,
    log: Path,
    *,
    pools: tuple[str, ...] = (),
    data_dir: Path | None = None,
    worker_id: str | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """A `ballet worker` on the stack's Valkey and sandbox; stopped (TERM) when the block ends.
    `pools`: its `--pool`s (none: `default`); `data_dir`: mirrors and workspaces of its
    own, as on another machine; `worker_id`: its BALLET_WORKER_ID."""
    env = worker_env(stack.settings)
    if data_dir is not None:
        env["BALLET_DATA_DIR"] = str(data_dir)
    if worker_id is not None:
        env["BALLET_WORKER_ID"] = worker_id
    with _ballet_process(["worker", *(f"--pool={p}" for p in pools)], env, log) as proc:
        yield proc


def process_env(settings_env: dict[str, str]) -> dict[str, str]:
    """This process's environment with Ballet's own settings (none inherited) replaced
    by `settings_env`: what a `ballet` process serving a stack runs with."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BALLET_")}
    env.pop("REDIS_URL", None)
    return {**env, **settings_env}


@contextlib.contextmanager
def _ballet_process(
    args: list[str], settings_env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """`ballet <args>` with these settings (none inherited), logging to `log`;
    stopped (TERM, then KILL after 30 s) when the block ends."""
    env = process_env(settings_env)
    argv = [sys.executable, "-m", "ballet", *args]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=out)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
