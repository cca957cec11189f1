"""The signed-in person's own endpoints, as a user access token of the App sees them.

- `GET /user`: the person (login, id, name, avatar_url, html_url, type, ...); any user
  token, `ghu_…` or `sandbox-user:<login>`.
- `GET /user/installations`: the App's installations the person has explicit access
  to (owner of the account, or a collaborator on one of its repositories); only a
  user access token (`ghu_…`) may ask, as on GitHub.
- `GET /user/installations/{installation_id}/repositories`: that installation's
  repositories the person has explicit access to, each with its `permissions`; 404
  for an installation the person cannot reach.
- `GET /users/{username}`, `GET /avatars/{login}` (an SVG, so pages that show
  avatars show something).
- `PUT /_sandbox/users/{login}` `{"name": str | null}`: a person's display name (by
  default the login).
"""

from __future__ import annotations

import html
import json
import zlib

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ballet.sandbox import shapes
from ballet.sandbox.auth import Actor
from ballet.sandbox.errors import ApiError, not_found
from ballet.sandbox.handler import actor_of, int_param, page, respond, sandbox_of
from ballet.sandbox.state import Repo, Sandbox

ACCOUNTS_CREATED = "2026-01-01T00:00:00Z"


def _person(request: Request) -> Actor:
    actor = actor_of(request)
    if actor.kind == "anonymous":
        raise ApiError(401, "Requires authentication")
    if actor.kind != "user":
        raise ApiError(403, "Resource not accessible by integration")
    return actor


def _through_app(request: Request) -> Actor:
    actor = _person(request)
    if not actor.via_app:
        raise ApiError(
            403,
            "You must authenticate with an access token authorized to a GitHub App "
            "in order to list installations",
        )
    return actor


def profile(sb: Sandbox, login: str, *, own: bool) -> shapes.JSON:
    """GitHub's public-user shape; the private-user one (`own`) for the person themself."""
    owned = [r for r in sb.repos.values() if r.owner == login]
    private = sum(1 for r in owned if r.private)
    shape = shapes.user(sb, login) | {
        "name": sb.user_names.get(login, login),
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "twitter_username": None,
        "public_repos": len(owned) - private,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": ACCOUNTS_CREATED,
        "updated_at": ACCOUNTS_CREATED,
    }
    if own:
        shape |= {
            "private_gists": 0,
            "total_private_repos": private,
            "owned_private_repos": private,
            "disk_usage": 0,
            "collaborators": 0,
            "two_factor_authentication": False,
        }
    return shape


async def get_authenticated(request: Request) -> JSONResponse:
    actor = _person(request)
    return respond(profile(sandbox_of(request), actor.login, own=True))


async def get_user(request: Request) -> JSONResponse:
    actor_of(request)
    sb, login = sandbox_of(request), request.path_params["username"]
    if login in sb.deleted_users:
        raise not_found()
    return respond(profile(sb, login, own=False))


def _reachable(sb: Sandbox, login: str, installation_id: int) -> list[Repo]:
    found = [
        r
        for r in sb.repos.values()
        if r.installation_id == installation_id and r.has_explicit_access(login)
    ]
    return sorted(found, key=lambda r: r.full_name.lower())


async def list_installations(request: Request) -> JSONResponse:
    actor, sb = _through_app(request), sandbox_of(request)
    found = [
        shapes.installation(sb, owner, iid)
        for owner, iid in sb.installations.items()
        if owner == actor.login or _reachable(sb, actor.login, iid)
    ]
    return respond({"total_count": len(found), "installations": page(request, found)})


async def installation_repositories(request: Request) -> JSONResponse:
    actor, sb = _through_app(request), sandbox_of(request)
    iid = int_param(request, "installation_id")
    owner = sb.owner_of_installation(iid)
    repos = _reachable(sb, actor.login, iid)
    if owner is None or (owner != actor.login and not repos):
        raise not_found()
    listed = [
        shapes.repository(sb, r) | {"permissions": shapes.repo_permissions(r, actor.login)}
        for r in page(request, repos)
    ]
    return respond(
        {"total_count": len(repos), "repository_selection": "all", "repositories": listed}
    )


async def avatar(request: Request) -> Response:
    login = request.path_params["login"]
    hue = zlib.crc32(login.encode()) % 360
    svg = (
        "<svg xmlns='http://www.w3.org/2000/svg' width='64' height='64' viewBox='0 0 64 64'>"
        f"<rect width='64' height='64' fill='hsl({hue},45%,55%)'/>"
        "<text x='32' y='42' font-family='sans-serif' font-size='30' fill='white' "
        f"text-anchor='middle'>{html.escape(login[:1].upper())}</text></svg>"
    )
    return Response(svg, media_type="image/svg+xml")


async def set_name(request: Request) -> JSONResponse:
    try:
        name = json.loads(await request.body())["name"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(422, 'Send {"name": "Mona Lisa"} (or null)') from exc
    if name is not None and not isinstance(name, str):
        raise ApiError(422, "name must be a string or null")
    sb, login = sandbox_of(request), request.path_params["login"]
    sb.user_names[login] = name
    return respond(profile(sb, login, own=False))


ROUTES = [
    Route("/user", get_authenticated),
    Route("/user/installations", list_installations),
    Route("/user/installations/{installation_id}/repositories", installation_repositories),
    Route("/users/{username}", get_user),
    Route("/avatars/{login}", avatar),
    Route("/_sandbox/users/{login}", set_name, methods=["PUT"]),
]
