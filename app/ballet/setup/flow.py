"""First run, Probot-style: register the GitHub App through GitHub's manifest flow.

`ballet serve` without App credentials serves these routes, only to a browser
that gave the one-time setup code (`setup/code.py`) that serve printed in its
log and keeps in its data dir; any other gets 403 and a page asking for it:

- `GET /setup` — a form: Ballet's public address, the App's name, an optional
  organisation. It sets a cookie holding a random form token, repeated in
  the form (a double-submit token: another site cannot post the form).
  A browser that has not given the code is asked for it instead (403).
- `POST /setup/code` — the code, compared in constant time: right, the browser's
  form token is let through the flow for an hour (kept in this process: a
  restart asks again); wrong, 403 again.
- `POST /setup` — builds the manifest and a one-time `state` bound to that
  browser's cookie, and posts the manifest to GitHub's "new App" page.
- `GET /setup/callback?code=…&state=…` — GitHub's redirect once the person
  created the App. The state must be one this process issued, unused, fresh
  and bound to the same browser; the code is converted
  (`POST /app-manifests/{code}/conversions`) into the App's id, private key
  and webhook secret, which are written to the env file; the page links to
  the App's installation. The App's OAuth client (id and secret, for "Sign in
  with GitHub" on Ballet's pages) and the public address typed in are saved too.

Once an App is registered every route answers 404, and `on_registered` tells
`ballet serve` to restart with the new credentials.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import structlog
from githubkit import GitHub, UnauthAuthStrategy
from githubkit.exception import GitHubException, RequestFailed
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ballet.setup import pages
from ballet.setup.code import is_the_code
from ballet.setup.envfile import update_env_file
from ballet.setup.manifest import (
    SetupInputError,
    build_manifest,
    new_app_url,
    public_url_of,
    web_url_of,
)

log = structlog.get_logger("ballet.setup")

COOKIE = "ballet_setup"
# GitHub's manifest code is valid for an hour; a state lives as long.
STATE_TTL_SECONDS = 3600.0
MAX_PENDING = 100
MAX_FORM_BYTES = 16 * 1024


@dataclass(frozen=True)
class RegisteredApp:
    app_id: int
    slug: str
    name: str
    html_url: str


@dataclass
class SetupFlow:
    api_url: str
    env_file: Path
    code: str  # the one-time setup code (setup/code.py)
    on_registered: Callable[[], None] = lambda: None
    clock: Callable[[], float] = time.monotonic
    registered: RegisteredApp | None = None
    # state -> (form token of the browser that started it, expiry, public address)
    _pending: dict[str, tuple[str, float, str]] = field(default_factory=dict)
    # form token of a browser that gave the code -> until when it may go on
    _authorised: dict[str, float] = field(default_factory=dict)
    _wrong_codes: int = 0

    @property
    def web_url(self) -> str:
        return web_url_of(self.api_url)

    def routes(self) -> list[Route]:
        return [
            Route("/", self.home, methods=["GET"]),
            Route("/setup", self.start, methods=["GET"]),
            Route("/setup", self.submit, methods=["POST"]),
            Route("/setup/code", self.enter_code, methods=["POST"]),
            Route("/setup/callback", self.callback, methods=["GET"]),
        ]

    async def home(self, request: Request) -> Response:
        if self.registered is not None:
            return _gone()
        return RedirectResponse("/setup", status_code=303)

    async def start(self, request: Request) -> Response:
        if self.registered is not None:
            return _gone()
        token = request.cookies.get(COOKIE) or secrets.token_urlsafe(32)
        if not self._may_go_on(token):
            return _ask_for_code(token, request)
        public_url = str(request.base_url).rstrip("/")
        page = pages.start_page(public_url, "Ballet", token, self.web_url)
        response = HTMLResponse(page)
        _set_cookie(response, token, request)
        return response

    async def enter_code(self, request: Request) -> Response:
        if self.registered is not None:
            return _gone()
        form = await _form(request)
        token = request.cookies.get(COOKIE, "")
        if not token or not hmac.compare_digest(token, form.get("form_token", "")):
            return _refused(
                403, "This form was not sent from this Ballet's setup page (cookies off?)."
            )
        if not is_the_code(self.code, form.get("code", "")):
            self._wrong_codes += 1
            if self._wrong_codes & (self._wrong_codes - 1) == 0:  # 1, 2, 4, 8…: a flood, few lines
                log.warning("wrong setup codes entered at /setup", so_far=self._wrong_codes)
            return _ask_for_code(token, request, wrong=True)
        now = self.clock()
        self._authorised = {t: until for t, until in self._authorised.items() if until > now}
        self._authorised[token] = now + STATE_TTL_SECONDS
        return RedirectResponse("/setup", status_code=303)

    def _may_go_on(self, token: str) -> bool:
        """Whether the browser holding form token `token` gave the setup code, within the hour."""
        until = self._authorised.get(token) if token else None
        return until is not None and self.clock() < until

    async def submit(self, request: Request) -> Response:
        if self.registered is not None:
            return _gone()
        if not self._may_go_on(request.cookies.get(COOKIE, "")):
            return _ask_for_code(request.cookies.get(COOKIE, ""), request)
        form = await _form(request)
        token = request.cookies.get(COOKIE, "")
        if not token or not hmac.compare_digest(token, form.get("form_token", "")):
            return _refused(
                403, "This form was not sent from this Ballet's setup page (cookies off?)."
            )
        try:
            public_url = public_url_of(form.get("public_url", ""))
            manifest = build_manifest(public_url, form.get("name", "Ballet"))
            state = self._new_state(token, public_url)
            action = new_app_url(self.web_url, form.get("organization") or None, state)
        except SetupInputError as exc:
            return _refused(400, str(exc))
        log.info("registering the GitHub App", github=self.web_url, hook=public_url)
        return HTMLResponse(pages.redirect_page(action, manifest))

    async def callback(self, request: Request) -> Response:
        if self.registered is not None:
            return _gone()
        if not self._may_go_on(request.cookies.get(COOKIE, "")):
            return _ask_for_code(request.cookies.get(COOKIE, ""), request)
        code = request.query_params.get("code", "")
        state = request.query_params.get("state", "")
        public_url = self._take_state(state, request.cookies.get(COOKIE, "")) if code else None
        if public_url is None:
            return _refused(
                403,
                "GitHub's answer does not match a setup this browser started here, or it"
                " came more than an hour later.",
            )
        try:
            data = await self._convert(code)
        except GitHubException as exc:
            log.warning("manifest conversion failed", error=str(exc))
            return _refused(502, f"GitHub did not turn the code into an App: {_why(exc)}.")
        app = RegisteredApp(
            app_id=int(data["id"]),
            slug=str(data.get("slug") or data["name"]),
            name=str(data["name"]),
            html_url=str(data["html_url"]),
        )
        self._save(app, data, public_url)
        self.registered = app
        self._pending.clear()
        self._authorised.clear()
        log.info("GitHub App registered", app_id=app.app_id, slug=app.slug, env=str(self.env_file))
        page = pages.done_page(app.name, app.html_url, str(self.env_file))
        # Restart only once this page has been sent.
        return HTMLResponse(page, background=BackgroundTask(self.on_registered))

    # -- state ---------------------------------------------------------------------

    def _new_state(self, token: str, public_url: str) -> str:
        now = self.clock()
        self._pending = {s: v for s, v in self._pending.items() if v[1] > now}
        if len(self._pending) >= MAX_PENDING:
            raise SetupInputError("too many setups in progress: finish one or wait an hour")
        state = secrets.token_urlsafe(32)
        self._pending[state] = (token, now + STATE_TTL_SECONDS, public_url)
        return state

    def _take_state(self, state: str, token: str) -> str | None:
        """Once for a state this process issued to the browser holding `token`: the
        public address that browser gave; else None."""
        issued = self._pending.get(state) if state else None
        # Another browser's guess must not burn the state of the one that started.
        if issued is None or not token or not hmac.compare_digest(issued[0], token):
            return None
        del self._pending[state]
        return issued[2] if self.clock() < issued[1] else None

    # -- GitHub and the env file ---------------------------------------------------------

    async def _convert(self, code: str) -> dict[str, Any]:
        async with GitHub(UnauthAuthStrategy(), base_url=self.api_url) as gh:
            response = await gh.rest.apps.async_create_from_manifest(code)
        data: dict[str, Any] = response.json()
        return data

    def _save(self, app: RegisteredApp, data: dict[str, Any], public_url: str) -> None:
        values = {
            "BALLET_APP_ID": str(app.app_id),
            "BALLET_PRIVATE_KEY": str(data["pem"]),
            "BALLET_GITHUB_API_URL": self.api_url,
            # The pages' sign-in comes back to the callback the manifest registered here.
            "BALLET_PUBLIC_URL": public_url,
        }
        if data.get("webhook_secret"):
            values["BALLET_WEBHOOK_SECRET"] = str(data["webhook_secret"])
        if data.get("client_id") and data.get("client_secret"):
            values["BALLET_GITHUB_CLIENT_ID"] = str(data["client_id"])
            values["BALLET_GITHUB_CLIENT_SECRET"] = str(data["client_secret"])
        update_env_file(
            self.env_file,
            values,
            drop=("BALLET_PRIVATE_KEY_PATH", "BALLET_WEBHOOK_SECRETS"),
            header=f"GitHub App {app.slug} ({app.html_url}), registered by `ballet serve` /setup",
        )


async def _form(request: Request) -> dict[str, str]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return {}
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0].strip() for name, values in parsed.items() if values}


def _set_cookie(response: Response, token: str, request: Request) -> None:
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(STATE_TTL_SECONDS),
        path="/setup",
        httponly=True,
        # Lax: sent on GitHub's top-level redirect back to /setup/callback.
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def _ask_for_code(token: str, request: Request, *, wrong: bool = False) -> Response:
    """403: this browser has not given the setup code; the page asks for it."""
    token = token or secrets.token_urlsafe(32)
    response = HTMLResponse(pages.code_page(token, wrong=wrong), status_code=403)
    _set_cookie(response, token, request)
    return response


def _why(exc: GitHubException) -> str:
    if isinstance(exc, RequestFailed):
        return f"{exc.response.status_code} {exc.response.raw_response.text[:200]}"
    return str(exc) or type(exc).__name__


def _refused(status: int, message: str) -> HTMLResponse:
    return HTMLResponse(pages.error_page("Setup refused", message), status_code=status)


def _gone() -> Response:
    return Response("Ballet is set up: this page no longer exists.\n", status_code=404)
