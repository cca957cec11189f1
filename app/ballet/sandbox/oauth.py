"""GitHub's OAuth web flow for the App's own OAuth client: "Sign in with GitHub".

- `GET /login/oauth/authorize?client_id&redirect_uri?&state?&login?&code_challenge?
  &code_challenge_method?`: who is signed in to "GitHub" is the request's
  `Authorization: token sandbox-user:<login>` (how tests sign in without a browser) or
  the cookie `POST /session` sets (how a person in a browser does). Signed in: 302 to
  `redirect_uri?code=…&state=…` at once (as if the App were already authorised).
  Not signed in: 200, a page saying so with a sign-in form, no redirect. An unknown
  `client_id`: GitHub's 404 page. A `redirect_uri` that is not exactly one of the
  App's callback URLs: 302 to the first callback URL with `error=redirect_uri_mismatch`.
- `POST /login/oauth/access_token` (form, JSON or query; client credentials in the body
  or HTTP Basic): `code` → `{access_token: ghu_…, expires_in: 28800, refresh_token:
  ghr_…, refresh_token_expires_in, scope: "", token_type: "bearer"}`;
  `grant_type=refresh_token&refresh_token=ghr_…` → a new pair. JSON when the `Accept`
  header asks for it, else form-encoded; errors (`incorrect_client_credentials`,
  `bad_verification_code`, `redirect_uri_mismatch`, `bad_refresh_token`) with 200, as
  GitHub answers. A code works once, for `oauth_code_ttl_seconds` (10 minutes).
- `POST /session` (form `login`, `return_to`) and `POST /logout`: the browser's sign-in.
- `PUT /_sandbox/app/callback_urls` `{"urls": [...] | null}`: register callback URLs
  (null: the default, `<Ballet's public URL>/oauth/callback`, from the webhook URL).
- `POST /_sandbox/oauth/expire`: every code and user token handed out expires now.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import secrets
import string
from dataclasses import replace
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ballet.sandbox.auth import actor_from_header
from ballet.sandbox.errors import ApiError
from ballet.sandbox.handler import now, respond, sandbox_of
from ballet.sandbox.state import OAuthCode, Sandbox, UserToken

CALLBACK_PATH = "/oauth/callback"
SESSION_COOKIE = "ballet_sandbox_user"
LOGIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}$")
# GitHub's refresh tokens live six months.
REFRESH_TTL_SECONDS = 15897600
_DOCS = "https://docs.github.com/apps/managing-oauth-apps/"
ERRORS = {
    "incorrect_client_credentials": (
        "The client_id and/or client_secret passed are incorrect.",
        "troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials",
    ),
    "redirect_uri_mismatch": (
        "The redirect_uri MUST match the registered callback URL for this application.",
        "troubleshooting-authorization-request-errors/#redirect-uri-mismatch",
    ),
    "bad_verification_code": (
        "The code passed is incorrect or expired.",
        "troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code",
    ),
    "bad_refresh_token": (
        "The refresh token passed is incorrect or expired.",
        "troubleshooting-oauth-app-access-token-request-errors/#bad-refresh-token",
    ),
    "unsupported_grant_type": (
        "The grant type is not supported: use the code or refresh_token grant.",
        "troubleshooting-oauth-app-access-token-request-errors/",
    ),
}


def public_url(url: str | None) -> str | None:
    """The scheme and host of a URL: Ballet's public address, from its webhook URL."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def callback_urls(sb: Sandbox) -> list[str]:
    """The App's registered callback URLs; the web flow redirects only to these."""
    if sb.app.callback_urls is not None:
        return list(sb.app.callback_urls)
    base = public_url(sb.hooks.url)
    return [base + CALLBACK_PATH] if base else []


def _with_query(url: str, params: dict[str, str | None]) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{url}{'&' if urlsplit(url).query else '?'}{query}"


def _page(status: int, title: str, body: str) -> HTMLResponse:
    text = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title></head><body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )
    return HTMLResponse(text, status_code=status)


def signed_in(request: Request) -> str | None:
    """The person signed in to the sandbox's web side: the API's user token, or the cookie."""
    sb = sandbox_of(request)
    try:
        actor = actor_from_header(sb, request.headers.get("authorization"), now())
    except ApiError:
        actor = None
    login = actor.login if actor is not None and actor.kind == "user" else None
    login = login or request.cookies.get(SESSION_COOKIE)
    if login is None or not LOGIN.match(login) or login in sb.deleted_users:
        return None
    return login


def _sign_in_page(request: Request, suggested: str | None) -> HTMLResponse:
    return_to = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    value = html.escape(suggested or "", quote=True)
    form = (
        "<p>You are not signed in to the Ballet sandbox, so it cannot authorise the App "
        "for you. Send <code>Authorization: token sandbox-user:&lt;login&gt;</code>, or "
        "sign in as any user:</p>"
        "<form method='post' action='/session'>"
        f"<input type='hidden' name='return_to' value='{html.escape(return_to, quote=True)}'>"
        f"<input name='login' value='{value}' placeholder='login' required> "
        "<button type='submit'>Sign in</button></form>"
    )
    return _page(200, "Sign in to the sandbox", form)


async def authorize(request: Request) -> Response:
    sb, query = sandbox_of(request), request.query_params
    if query.get("client_id") != sb.app.client_id:
        return _page(404, "Not Found", "<p>No GitHub App has this client_id.</p>")
    registered = callback_urls(sb)
    if not registered:
        return _page(
            400,
            "No callback URL",
            "<p>The App has no callback URL: start the sandbox with a webhook URL or "
            "<code>PUT /_sandbox/app/callback_urls</code>.</p>",
        )
    state = query.get("state")
    redirect_uri = query.get("redirect_uri") or registered[0]
    if redirect_uri not in registered:
        description, uri = ERRORS["redirect_uri_mismatch"]
        error = {"error": "redirect_uri_mismatch", "error_description": description}
        target = _with_query(registered[0], {**error, "error_uri": _DOCS + uri, "state": state})
        return RedirectResponse(target, status_code=302)
    login = signed_in(request)
    if login is None:
        return _sign_in_page(request, query.get("login"))
    code = secrets.token_hex(10)
    sb.oauth_codes[code] = OAuthCode(
        login=login,
        client_id=sb.app.client_id,
        redirect_uri=redirect_uri,
        expires_at=now() + timedelta(seconds=sb.oauth_code_ttl_seconds),
        code_challenge=query.get("code_challenge"),
        code_challenge_method=query.get("code_challenge_method", "plain"),
    )
    return RedirectResponse(_with_query(redirect_uri, {"code": code, "state": state}), 302)


async def _token_params(request: Request) -> dict[str, str]:
    """The exchange's parameters from the query, a form or JSON body, and Basic auth."""
    params = dict(request.query_params)
    raw = (await request.body()).decode("utf-8", "replace")
    if "json" in request.headers.get("content-type", ""):
        try:
            data = json.loads(raw or "{}")
        except json.JSONDecodeError:
            data = {}
        if isinstance(data, dict):
            params.update({k: str(v) for k, v in data.items() if v is not None})
    else:
        params.update({k: v[0] for k, v in parse_qs(raw).items()})
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "basic":
        try:
            client_id, _, secret = base64.b64decode(value).decode().partition(":")
        except ValueError:
            client_id, secret = "", ""
        params.setdefault("client_id", client_id)
        params.setdefault("client_secret", secret)
    return params


def _answer(request: Request, data: dict[str, Any]) -> Response:
    """JSON when asked for, else form-encoded: the token endpoint's two formats."""
    if "json" in request.headers.get("accept", ""):
        return JSONResponse(data)
    return Response(
        urlencode({k: str(v) for k, v in data.items()}),
        media_type="application/x-www-form-urlencoded; charset=utf-8",
    )


def _error(request: Request, error: str) -> Response:
    description, uri = ERRORS[error]
    return _answer(
        request, {"error": error, "error_description": description, "error_uri": _DOCS + uri}
    )


def _random(length: int) -> str:
    # GitHub's tokens are a prefix and base62: no `-` or `_` that a parser might split on.
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(length))


def _issue(sb: Sandbox, login: str) -> dict[str, Any]:
    moment = now()
    access, refresh = "ghu_" + _random(36), "ghr_" + _random(76)
    ttl = sb.user_token_ttl_seconds
    sb.user_tokens[access] = UserToken(login, moment + timedelta(seconds=ttl))
    sb.refresh_tokens[refresh] = UserToken(login, moment + timedelta(seconds=REFRESH_TTL_SECONDS))
    return {
        "access_token": access,
        "expires_in": int(ttl),
        "refresh_token": refresh,
        "refresh_token_expires_in": REFRESH_TTL_SECONDS,
        "scope": "",
        "token_type": "bearer",
    }


def _verifier_matches(code: OAuthCode, verifier: str | None) -> bool:
    if code.code_challenge is None:
        return True
    if verifier is None:
        return False
    if code.code_challenge_method.upper() == "S256":
        digest = hashlib.sha256(verifier.encode()).digest()
        expected = base64.urlsafe_b64encode(digest).decode().rstrip("=")
        return secrets.compare_digest(expected, code.code_challenge)
    return secrets.compare_digest(verifier, code.code_challenge)


async def access_token(request: Request) -> Response:
    sb = sandbox_of(request)
    params = await _token_params(request)
    if params.get("client_id") != sb.app.client_id or not secrets.compare_digest(
        params.get("client_secret", ""), sb.app.client_secret
    ):
        return _error(request, "incorrect_client_credentials")
    grant = params.get("grant_type", "authorization_code")
    if grant == "refresh_token":
        held = sb.refresh_tokens.pop(params.get("refresh_token", ""), None)
        if held is None or held.expires_at <= now():
            return _error(request, "bad_refresh_token")
        return _answer(request, _issue(sb, held.login))
    if grant != "authorization_code":
        return _error(request, "unsupported_grant_type")
    # Popped before any other check: a code is spent by its first use, right or wrong.
    code = sb.oauth_codes.pop(params.get("code", ""), None)
    if code is None or code.expires_at <= now() or code.client_id != sb.app.client_id:
        return _error(request, "bad_verification_code")
    if params.get("redirect_uri") not in (None, "", code.redirect_uri):
        return _error(request, "redirect_uri_mismatch")
    if not _verifier_matches(code, params.get("code_verifier")):
        return _error(request, "bad_verification_code")
    return _answer(request, _issue(sb, code.login))


def _safe_return(target: str) -> str:
    """Only a path on the sandbox itself: the sign-in form must not redirect elsewhere."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


async def session(request: Request) -> Response:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    login = form.get("login", [""])[0].strip()
    if not LOGIN.match(login):
        return _page(422, "Sign-in failed", "<p>A login is letters, digits and dashes.</p>")
    response = RedirectResponse(_safe_return(form.get("return_to", ["/"])[0]), 303)
    response.set_cookie(SESSION_COOKIE, login, httponly=True, samesite="lax")
    return response


async def logout(request: Request) -> Response:
    response = _page(200, "Signed out", "<p>You are signed out of the sandbox.</p>")
    response.delete_cookie(SESSION_COOKIE)
    return response


async def set_callback_urls(request: Request) -> JSONResponse:
    try:
        urls = json.loads(await request.body())["urls"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(422, 'Send {"urls": ["http://host:port/oauth/callback"]} or null') from exc
    valid = isinstance(urls, list) and 0 < len(urls) <= 10
    if urls is not None and not (
        valid and all(isinstance(u, str) and public_url(u) is not None for u in urls)
    ):
        raise ApiError(422, "urls: between 1 and 10 http(s) URLs, or null for the default")
    sb = sandbox_of(request)
    sb.app.callback_urls = tuple(urls) if urls is not None else None
    return respond({"urls": callback_urls(sb)})


async def expire_all(request: Request) -> JSONResponse:
    """Every code and user token the flow has handed out expires now (tests of expiry
    ask for it instead of sleeping past a short lifetime). Refresh tokens still work,
    as they do at GitHub once a user token has expired."""
    sb = sandbox_of(request)
    gone = now() - timedelta(seconds=1)
    sb.oauth_codes = {k: replace(c, expires_at=gone) for k, c in sb.oauth_codes.items()}
    sb.user_tokens = {k: replace(t, expires_at=gone) for k, t in sb.user_tokens.items()}
    return respond({"codes": len(sb.oauth_codes), "user_tokens": len(sb.user_tokens)})


ROUTES = [
    Route("/login/oauth/authorize", authorize),
    Route("/login/oauth/access_token", access_token, methods=["POST"]),
    Route("/session", session, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
    Route("/_sandbox/app/callback_urls", set_callback_urls, methods=["PUT"]),
    Route("/_sandbox/oauth/expire", expire_all, methods=["POST"]),
]
