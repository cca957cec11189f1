"""What every REST handler starts with: the sandbox, the caller, the repository, the body."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ballet.sandbox.auth import Actor, actor_from_header, require
from ballet.sandbox.errors import ApiError, not_found, unprocessable
from ballet.sandbox.state import Repo, Sandbox
from ballet.sandbox.token_scope import check_permission


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def sandbox_of(request: Request) -> Sandbox:
    sb: Sandbox = request.state.sandbox
    return sb


def actor_of(request: Request) -> Actor:
    """The authenticated caller; remembered on the request so the request log can name it."""
    actor = actor_from_header(sandbox_of(request), request.headers.get("authorization"), now())
    request.state.actor = actor
    return actor


def repo_for(request: Request, need: str) -> tuple[Sandbox, Repo, Actor]:
    sb = sandbox_of(request)
    actor = actor_of(request)
    repo = sb.repo(request.path_params["owner"], request.path_params["repo"])
    if repo is None:
        raise not_found()
    if actor.kind == "anonymous" and request.method not in ("GET", "HEAD"):
        raise ApiError(401, "Requires authentication")
    require(actor, repo, need)
    check_permission(actor, request.method, request.url.path, repo)
    return sb, repo, actor


async def body_of(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"Problems parsing JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ApiError(400, "Problems parsing JSON: expected an object")
    return data


def field(data: dict[str, Any], name: str, kind: type, *, required: bool = False) -> Any:
    """`data[name]` checked to be a `kind`; a 422 naming the field otherwise."""
    if name not in data or data[name] is None:
        if required:
            raise unprocessable(f'"{name}" wasn\'t supplied.', field=name, code="missing_field")
        return None
    value = data[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise unprocessable(
            f'Invalid request. "{name}" must be a {kind.__name__}.', field=name, code="invalid"
        )
    return value


def int_param(request: Request, name: str) -> int:
    try:
        return int(request.path_params[name])
    except ValueError as exc:
        raise not_found() from exc


def page(request: Request, items: list[Any]) -> list[Any]:
    """GitHub's `per_page` (default 30, at most 100) and `page` (from 1)."""
    try:
        per_page = min(max(int(request.query_params.get("per_page", 30)), 1), 100)
        number = max(int(request.query_params.get("page", 1)), 1)
    except ValueError as exc:
        raise unprocessable("per_page and page must be integers", field="per_page") from exc
    return items[(number - 1) * per_page : number * per_page]


def respond(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)
