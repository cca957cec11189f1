"""Git's smart HTTP at `/<owner>/<name>.git/...`, served by `git http-backend` as a CGI.

Authenticated as GitHub does: HTTP Basic with any username and an installation
token or `sandbox-user:<login>` as the password. Fetching needs read access,
pushing needs write. Request and response bodies are streamed. A push's ref
changes are found by snapshotting the refs before and after receive-pack, and
then announced like any other ref change (see pushes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ballet.sandbox import gitrepo, pushes
from ballet.sandbox.auth import Actor, require
from ballet.sandbox.errors import ApiError, not_found
from ballet.sandbox.handler import actor_of, sandbox_of
from ballet.sandbox.state import Repo, Sandbox
from ballet.sandbox.token_scope import check_git

CHUNK = 64 * 1024


def _service(request: Request) -> str:
    rest = request.path_params["rest"]
    if rest == "info/refs":
        return str(request.query_params.get("service", "git-upload-pack"))
    return str(rest)


async def git_http(request: Request) -> Response:
    sb = sandbox_of(request)
    repo = sb.repo(request.path_params["owner"], request.path_params["name"])
    if repo is None:
        raise not_found()
    actor = actor_of(request)
    if actor.kind == "anonymous":
        raise ApiError(401, "Authentication required: use a token as the password")
    pushing = _service(request) == "git-receive-pack"
    require(actor, repo, "write" if pushing else "read")
    check_git(actor, pushing)
    if pushing and request.path_params["rest"] == "git-receive-pack":
        return await _receive_pack(request, sb, repo, actor)
    return await _run_backend(request, sb, repo, actor)


async def _receive_pack(request: Request, sb: Sandbox, repo: Repo, actor: Actor) -> Response:
    """Hold the repo's ref lock for the whole push, so the snapshots see only this push."""
    await repo.ref_lock.acquire()
    try:
        before = gitrepo.refs(repo.path)
    except BaseException:
        repo.ref_lock.release()
        raise

    def finished() -> None:
        try:
            pushes.refs_changed(sb, repo, before, gitrepo.refs(repo.path), actor.login)
        finally:
            repo.ref_lock.release()

    try:
        return await _run_backend(request, sb, repo, actor, on_finished=finished)
    except BaseException:
        repo.ref_lock.release()
        raise


async def _run_backend(
    request: Request,
    sb: Sandbox,
    repo: Repo,
    actor: Actor,
    on_finished: Callable[[], None] | None = None,
) -> Response:
    env = {
        "GIT_PROJECT_ROOT": str(sb.data_dir),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": f"/{repo.owner}/{repo.name}.git/{request.path_params['rest']}",
        "REQUEST_METHOD": request.method,
        "QUERY_STRING": request.url.query,
        "CONTENT_TYPE": request.headers.get("content-type", ""),
        "REMOTE_USER": actor.login,
        "REMOTE_ADDR": request.client.host if request.client else "127.0.0.1",
        "GIT_HTTP_MAX_REQUEST_BUFFER": "100M",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    for header in ("content-encoding", "git-protocol"):
        if header in request.headers:
            env["HTTP_" + header.upper().replace("-", "_")] = request.headers[header]
    proc = await asyncio.create_subprocess_exec(
        "git",
        "http-backend",
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin and proc.stdout
    feeder = asyncio.create_task(_feed(request, proc.stdin))
    try:
        status, headers = await _read_cgi_headers(proc.stdout)
    except BaseException:
        await _stop(proc, feeder)
        raise
    return _CgiResponse(proc, feeder, status, headers, on_finished)


class _CgiResponse(StreamingResponse):
    """Streams the backend's output; then, however the stream ended (a client can leave
    mid-push), stops the process and runs `on_finished`, which releases a push's lock."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        feeder: asyncio.Task[None],
        status: int,
        headers: dict[str, str],
        on_finished: Callable[[], None] | None,
    ) -> None:
        self._proc = proc
        self._feeder = feeder
        self._on_finished = on_finished
        super().__init__(self._body(), status_code=status, headers=headers)

    async def _body(self) -> AsyncIterator[bytes]:
        assert self._proc.stdout
        while chunk := await self._proc.stdout.read(CHUNK):
            yield chunk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await _stop(self._proc, self._feeder)
            if self._on_finished is not None:
                self._on_finished()


async def _stop(proc: asyncio.subprocess.Process, feeder: asyncio.Task[None]) -> None:
    """Let a finished backend exit; kill one cut off mid-stream."""
    assert proc.stdout
    if not proc.stdout.at_eof() and proc.returncode is None:
        proc.kill()
    await proc.wait()
    feeder.cancel()
    # A client that left mid-body makes the feeder fail: nothing more to do about it.
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await feeder


async def _feed(request: Request, stdin: asyncio.StreamWriter) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        async for chunk in request.stream():
            stdin.write(chunk)
            await stdin.drain()
    stdin.close()


async def _read_cgi_headers(stdout: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status, headers = 200, dict[str, str]()
    while True:
        line = (await stdout.readline()).decode("latin-1").rstrip("\r\n")
        if not line:
            return status, headers
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.split()[0])
        else:
            headers[name.strip()] = value.strip()


ROUTES = [
    Route("/{owner}/{name}.git/{rest:path}", git_http, methods=["GET", "POST"]),
]
