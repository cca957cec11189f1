"""GitHub's App manifest flow: register the sandbox's App from a manifest.

- `POST /settings/apps/new?state=…` (and `/organizations/{org}/settings/apps/new`):
  the web page a browser posts the manifest to (form field `manifest`). GitHub
  shows it for review and creates the App when the person clicks; the
  sandbox creates it at once, then redirects to the manifest's `redirect_url`
  with a one-time `code` and the `state` unchanged, as GitHub does.
- `POST /app-manifests/{code}/conversions`: the code (once, unauthenticated)
  becomes the App: id, slug, `pem`, `webhook_secret`, client id and secret (the
  OAuth client of oauth.py), and the manifest's `callback_urls` are registered.

Registering replaces the sandbox's one App: a new id and key pair, a new
webhook secret, deliveries to the manifest's hook URL and only for the
events it subscribes to.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ballet.sandbox import shapes
from ballet.sandbox.auth import new_app_identity
from ballet.sandbox.errors import not_found
from ballet.sandbox.handler import respond, sandbox_of

PERMISSION_LEVELS = frozenset({"read", "write", "admin"})


def _refuse(message: str) -> Response:
    return PlainTextResponse(f"Invalid GitHub App manifest: {message}\n", status_code=422)


def _checked(manifest: Any) -> str | None:
    """What is wrong with the manifest, or None."""
    if not isinstance(manifest, dict):
        return "not a JSON object"
    for name in ("name", "url", "redirect_url"):
        if not isinstance(manifest.get(name), str) or not manifest[name]:
            return f"`{name}` is required"
    hook = manifest.get("hook_attributes")
    if not isinstance(hook, dict) or not isinstance(hook.get("url"), str):
        return "`hook_attributes.url` is required"
    for name in ("url", "redirect_url"):
        if urlsplit(manifest[name]).scheme not in ("http", "https"):
            return f"`{name}` must be an http(s) URL"
    permissions = manifest.get("default_permissions", {})
    if not isinstance(permissions, dict) or any(
        v not in PERMISSION_LEVELS for v in permissions.values()
    ):
        return "`default_permissions` must map permissions to read, write or admin"
    callbacks = manifest.get("callback_urls", [])
    if not isinstance(callbacks, list) or len(callbacks) > 10:
        return "`callback_urls` must be a list of at most 10 URLs"
    if any(
        not isinstance(u, str) or urlsplit(u).scheme not in ("http", "https") for u in callbacks
    ):
        return "`callback_urls` must be http(s) URLs"
    events = manifest.get("default_events", [])
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        return "`default_events` must be a list of event names"
    return None


async def new_app(request: Request) -> Response:
    body = (await request.body()).decode("utf-8", "replace")
    fields = parse_qs(body)
    try:
        manifest = json.loads(fields.get("manifest", [""])[0])
    except json.JSONDecodeError as exc:
        return _refuse(f"not JSON ({exc})")
    problem = _checked(manifest)
    if problem is not None:
        return _refuse(problem)
    sb = sandbox_of(request)
    code = secrets.token_hex(10)
    owner = request.path_params.get("org", "sandbox")
    sb.manifest_codes[code] = (manifest, owner)
    query = {"code": code}
    if "state" in request.query_params:
        query["state"] = request.query_params["state"]
    return RedirectResponse(f"{manifest['redirect_url']}?{urlencode(query)}", status_code=302)


def slug_of(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "app"


async def convert(request: Request) -> JSONResponse:
    sb = sandbox_of(request)
    found = sb.manifest_codes.pop(request.path_params["code"], None)
    if found is None:
        raise not_found()
    manifest, owner = found
    app_id = sb.next_id()
    identity = new_app_identity(app_id, slug_of(manifest["name"]))
    identity.name = manifest["name"]
    identity.permissions = {**manifest.get("default_permissions", {}), "metadata": "read"}
    identity.events = tuple(manifest.get("default_events", ()))
    # None keeps the default callback, `<hook URL's scheme and host>/oauth/callback`.
    identity.callback_urls = (
        tuple(manifest["callback_urls"]) if manifest.get("callback_urls") else None
    )
    sb.app = identity
    sb.hooks.url = manifest["hook_attributes"]["url"]
    sb.hooks.secret = identity.webhook_secret
    sb.hooks.app_id = app_id
    sb.hooks.events = frozenset(identity.events)
    shape = shapes.app(sb)
    shape["owner"] = shapes.user(sb, owner)
    shape["external_url"] = manifest["url"]
    shape["description"] = manifest.get("description")
    shape.update(
        {
            "client_secret": identity.client_secret,
            "webhook_secret": identity.webhook_secret,
            "pem": identity.private_key_pem.decode(),
        }
    )
    return respond(shape, 201)


ROUTES = [
    Route("/settings/apps/new", new_app, methods=["POST"]),
    Route("/organizations/{org}/settings/apps/new", new_app, methods=["POST"]),
    Route("/app-manifests/{code}/conversions", convert, methods=["POST"]),
]
