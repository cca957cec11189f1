"""Fixtures for the sandbox tests: a real sandbox on loopback and a real webhook receiver."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from ballet.sandbox.server import BackgroundSandbox, bind, url_of
from githubkit import AppAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.cache import MemCacheStrategy
from githubkit.webhooks import verify
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


@dataclass
class Received:
    event: str
    delivery: str
    signature_ok: bool
    headers: dict[str, str]
    payload: dict[str, Any]


@dataclass
class Receiver:
    """Records webhook deliveries; `secret` is set once the sandbox (and its secret) exists."""

    url: str
    secret: str = ""
    status: int = 202
    received: list[Received] = field(default_factory=list)

    def events(self) -> list[tuple[str, str | None]]:
        return [(r.event, r.payload.get("action")) for r in self.received]


def _receiver_app(receiver: Receiver) -> Starlette:
    async def hook(request: Request) -> Response:
        body = await request.body()
        signature = request.headers.get("x-hub-signature-256", "")
        receiver.received.append(
            Received(
                event=request.headers["x-github-event"],
                delivery=request.headers["x-github-delivery"],
                signature_ok=verify(receiver.secret, body, signature),
                headers=dict(request.headers),
                payload=json.loads(body),
            )
        )
        return Response(status_code=receiver.status)

    return Starlette(routes=[Route("/hook", hook, methods=["POST"])])


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    sock = bind("127.0.0.1", 0)
    recv = Receiver(url=url_of(sock) + "/hook")
    server = uvicorn.Server(uvicorn.Config(_receiver_app(recv), log_level="warning"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    yield recv
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture
def sandbox(tmp_path: Path, receiver: Receiver) -> Iterator[BackgroundSandbox]:
    with BackgroundSandbox(tmp_path / "sandbox", receiver.url, ci_timeout_seconds=30) as running:
        receiver.secret = running.sandbox.app.webhook_secret
        yield running


@pytest.fixture
def admin(sandbox: BackgroundSandbox) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sandbox.api_url, timeout=30) as client:
        yield client


def make_repo(admin: httpx.Client, **spec: Any) -> dict[str, Any]:
    body = {
        "owner": "octo",
        "name": "demo",
        "collaborators": {"writer": "write", "reader": "read", "triager": "triage"},
        "files": {"README.md": "# demo\n"},
    }
    body.update(spec)
    response = admin.post("/_sandbox/repos", json=body)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


def settle(admin: httpx.Client) -> None:
    admin.post("/_sandbox/settle").raise_for_status()


def git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
    }
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout.strip()


def authed_url(sandbox: BackgroundSandbox, password: str, repo: str = "octo/demo") -> str:
    host = sandbox.api_url.removeprefix("http://")
    return f"http://x-access-token:{password}@{host}/{repo}.git"


def push_branch(
    workdir: Path, url: str, branch: str, files: dict[str, str], start: str = "main"
) -> str:
    """Clone `url`, commit `files` on `branch` (from `start`), push; the new sha."""
    clone = workdir / f"clone-{branch.replace('/', '-')}-{len(list(workdir.iterdir()))}"
    git(workdir, "clone", "--quiet", "--branch", start, url, str(clone))
    git(clone, "checkout", "--quiet", "-B", branch)
    for name, text in files.items():
        (clone / name).write_text(text)
    git(clone, "add", "-A")
    git(clone, "commit", "--quiet", "-m", f"change {', '.join(files)}")
    git(clone, "push", "--quiet", "origin", f"HEAD:refs/heads/{branch}")
    return git(clone, "rev-parse", "HEAD")


def token_for(sandbox: BackgroundSandbox, owner: str = "octo") -> str:
    gh = app_client(sandbox)
    installation = gh.rest.apps.get_user_installation(owner).parsed_data
    return gh.rest.apps.create_installation_access_token(installation.id).parsed_data.token


def app_client(sandbox: BackgroundSandbox) -> GitHub[AppAuthStrategy]:
    app = sandbox.sandbox.app
    auth = AppAuthStrategy(app.app_id, app.private_key_pem.decode())
    # A cache of its own: githubkit's default cache is process-wide and keyed by app id,
    # so it would hand one test's JWT (signed by that sandbox's key) to the next sandbox.
    return GitHub(auth, base_url=sandbox.api_url, cache_strategy=MemCacheStrategy())


def installation_client(sandbox: BackgroundSandbox, owner: str = "octo") -> GitHub[Any]:
    gh = app_client(sandbox)
    installation = gh.rest.apps.get_user_installation(owner).parsed_data
    return gh.with_auth(gh.auth.as_installation(installation.id))


def user_client(sandbox: BackgroundSandbox, login: str) -> GitHub[TokenAuthStrategy]:
    return GitHub(TokenAuthStrategy(f"sandbox-user:{login}"), base_url=sandbox.api_url)
