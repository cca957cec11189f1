"""The App's own endpoints: JWT-authenticated, they find installations and mint tokens."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import shapes
from ballet.sandbox.auth import issue_token, reaches
from ballet.sandbox.errors import ApiError, not_found
from ballet.sandbox.handler import actor_of, body_of, int_param, now, page, respond, sandbox_of
from ballet.sandbox.token_scope import granted, requested_scope


def _require_jwt(request: Request) -> None:
    if actor_of(request).kind != "app":
        raise ApiError(
            401, "A JSON web token could not be decoded: this endpoint needs the App's JWT"
        )


async def get_app(request: Request) -> JSONResponse:
    _require_jwt(request)
    return respond(shapes.app(sandbox_of(request)))


async def list_installations(request: Request) -> JSONResponse:
    _require_jwt(request)
    sb = sandbox_of(request)
    return respond([shapes.installation(sb, owner, iid) for owner, iid in sb.installations.items()])


async def get_installation(request: Request) -> JSONResponse:
    _require_jwt(request)
    sb = sandbox_of(request)
    iid = int_param(request, "installation_id")
    owner = sb.owner_of_installation(iid)
    if owner is None:
        raise not_found()
    return respond(shapes.installation(sb, owner, iid))


async def create_token(request: Request) -> JSONResponse:
    _require_jwt(request)
    sb = sandbox_of(request)
    iid = int_param(request, "installation_id")
    if sb.owner_of_installation(iid) is None:
        raise not_found()
    scope = requested_scope(sb, iid, await body_of(request))
    ids = None if scope.repos is None else frozenset(r.id for r in scope.repos)
    token = issue_token(sb, iid, now(), repository_ids=ids, permissions=scope.permissions)
    answer: dict[str, object] = {
        "token": token.token,
        "expires_at": shapes.iso(token.expires_at),
        "permissions": scope.permissions or granted(sb),
        "repository_selection": "all" if scope.repos is None else "selected",
    }
    if scope.repos is not None:
        answer["repositories"] = [shapes.repository(sb, r) for r in scope.repos]
    return respond(answer, 201)


async def repo_installation(request: Request) -> JSONResponse:
    _require_jwt(request)
    sb = sandbox_of(request)
    repo = sb.repo(request.path_params["owner"], request.path_params["repo"])
    if repo is None:
        raise not_found()
    return respond(shapes.installation(sb, repo.owner, repo.installation_id))


async def owner_installation(request: Request) -> JSONResponse:
    _require_jwt(request)
    sb = sandbox_of(request)
    owner = request.path_params["owner"]
    if owner not in sb.installations:
        raise not_found()
    return respond(shapes.installation(sb, owner, sb.installations[owner]))


async def installation_repositories(request: Request) -> JSONResponse:
    """`GET /installation/repositories`: the repositories an installation token reaches."""
    sb, actor = sandbox_of(request), actor_of(request)
    if actor.kind != "installation":
        raise ApiError(403, "You must authenticate with an installation access token")
    repos = sorted(
        (r for r in sb.repos.values() if reaches(actor, r)), key=lambda r: f"{r.owner}/{r.name}"
    )
    listed = page(request, repos)
    return respond(
        {
            "total_count": len(repos),
            "repository_selection": "all" if actor.repository_ids is None else "selected",
            "repositories": [shapes.repository(sb, r) for r in listed],
        }
    )


ROUTES = [
    Route("/users/{owner}/installation", owner_installation),
    Route("/orgs/{owner}/installation", owner_installation),
    Route("/app", get_app),
    Route("/app/installations", list_installations),
    Route("/app/installations/{installation_id}", get_installation),
    Route("/app/installations/{installation_id}/access_tokens", create_token, methods=["POST"]),
    Route("/repos/{owner}/{repo}/installation", repo_installation),
    Route("/installation/repositories", installation_repositories),
]
