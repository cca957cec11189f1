"""Sign in with GitHub: the App's OAuth web flow, ending in a signed session cookie.

- `GET /login?next=/tickets/…` makes a random state, keeps it (with `next`) in
  a short-lived signed cookie of this browser's, and sends the browser to
  GitHub's authorize page;
- `GET /oauth/callback?code&state`: the state must be the one this browser's
  cookie holds (so nobody can sign a person in as someone else); the code is
  traded for a user token, which asks GitHub who signed in, and is dropped.
  The session cookie holds the login and user id only;
- `POST /logout` (CSRF-checked) ends the session, in Redis too (`signed_in.py`).

`next` is only ever a path on this Ballet: never another site (no open redirect).
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

import structlog
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ballet.watch.cookies import SIGNIN_COOKIE, SignIn
from ballet.watch.forms import csrf_refusal, form_of
from ballet.watch.oauth import SignInFailed, authorize_url, exchange, whoami
from ballet.watch.render import page
from ballet.watch.state import viewer_of, watch_state

log = structlog.get_logger("ballet.watch")

CALLBACK_PATH = "/oauth/callback"
DEFAULT_NEXT = "/tickets"


def local_path(value: str | None) -> str:
    """`value` if it is a path on this site, else the tickets page."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return DEFAULT_NEXT
    if any(ord(c) < 0x20 or c in "\\\x7f" for c in value):
        return DEFAULT_NEXT
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return DEFAULT_NEXT
    return value


async def login(request: Request) -> Response:
    state = watch_state(request)
    config = state.config
    if not (config.sign_in and config.client_id):
        return await _refused(request, 503, "Sign-in is not configured", _NOT_CONFIGURED)
    flow = SignIn(secrets.token_urlsafe(32), local_path(request.query_params.get("next")))
    redirect_uri = state.public_url(request) + CALLBACK_PATH
    target = authorize_url(config.github_web_url, config.client_id, redirect_uri, flow.state)
    response = RedirectResponse(target, status_code=302)
    state.cookies.start_signin(response, flow)
    return response


async def callback(request: Request) -> Response:
    state = watch_state(request)
    config = state.config
    if not (config.sign_in and config.client_id and config.client_secret):
        return await _refused(request, 503, "Sign-in is not configured", _NOT_CONFIGURED)
    flow = state.cookies.signin(request.cookies.get(SIGNIN_COOKIE))
    given = request.query_params.get("state", "")
    code = request.query_params.get("code", "")
    if flow is None or not given or not hmac.compare_digest(flow.state, given):
        return await _refused(request, 403, "Sign-in refused", _NOT_STARTED_HERE)
    if not code:
        why = request.query_params.get("error", "no code")[:60]
        return await _refused(
            request, 403, "Sign-in refused", f"GitHub did not sign you in ({why})."
        )
    redirect_uri = state.public_url(request) + CALLBACK_PATH
    try:
        token = await exchange(
            state.http,
            config.github_web_url,
            config.client_id,
            config.client_secret,
            code,
            redirect_uri,
        )
        user = await whoami(state.http, config.github_api_url, token)
    except SignInFailed as exc:
        log.warning("sign-in failed", error=str(exc))
        return await _refused(request, 502, "Sign-in failed", f"{exc}. Try signing in again.")
    del token  # not kept: pages ask GitHub with the App's installation, not the person's token
    response = RedirectResponse(flow.next, status_code=303)
    state.cookies.end_signin(response)
    await state.signed_in.begin(state.cookies.start_session(response, user.login, user.id))
    log.info("signed in", login=user.login)
    return response


async def logout(request: Request) -> Response:
    state = watch_state(request)
    viewer = await viewer_of(request)
    refusal = csrf_refusal(request, viewer, await form_of(request), state.public_url(request))
    if refusal is not None:
        return await _refused(request, 403, "Not signed out", refusal)
    response = RedirectResponse("/", status_code=303)
    state.cookies.end_session(response)
    if viewer is not None:
        # On the server too: a copy of the cookie is no session on any web process.
        await state.signed_in.end(viewer)
        log.info("signed out", login=viewer.login)
    return response


_NOT_CONFIGURED = (
    "This Ballet has no GitHub OAuth client: set BALLET_GITHUB_CLIENT_ID and"
    " BALLET_GITHUB_CLIENT_SECRET to the App's client id and secret (docs/getting-started.md)."
    " Until then only public repositories' tickets are shown."
)
_NOT_STARTED_HERE = (
    "GitHub's answer does not match a sign-in this browser started here, or it came more"
    " than ten minutes later. Sign in again."
)


async def _refused(request: Request, status: int, title: str, message: str) -> Response:
    state = watch_state(request)
    return page(
        state.templates,
        request,
        "message.html",
        await viewer_of(request),
        status=status,
        sign_in=state.config.sign_in,
        title=title,
        message=message,
    )
