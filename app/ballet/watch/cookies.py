"""The signed cookies: who is signed in, and the state of a sign-in under way.

Both are signed with itsdangerous (HMAC-SHA256 over a timestamped payload) under
the session key, each with a salt of its own, so one can never stand in for
the other. A cookie whose signature does not verify, or that is older than its
lifetime, reads as absent: a forged or stale session is simply signed out.

The session holds the login, the user id, the page's CSRF token and the id of
its server-side session (`signed_in.py`: signing out ends it), never a GitHub
token: access is asked of GitHub with the App's installation.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadData, URLSafeTimedSerializer
from starlette.responses import Response

SESSION_COOKIE = "ballet_session"
SIGNIN_COOKIE = "ballet_signin"
SESSION_SECONDS = 8 * 3600  # a working day; then GitHub is asked again
SIGNIN_SECONDS = 600  # time to click through GitHub's authorize page
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")


@dataclass(frozen=True)
class Viewer:
    """A person signed in with GitHub."""

    login: str
    user_id: int
    csrf: str  # repeated in every form this person is shown
    session: str  # its id in Redis, which signing out deletes (signed_in.py)


@dataclass(frozen=True)
class SignIn:
    """A sign-in under way: the state GitHub must hand back, and where to go after."""

    state: str
    next: str


class Cookies:
    def __init__(self, key: bytes, *, secure: bool) -> None:
        sha256 = {"digest_method": hashlib.sha256}  # itsdangerous' default is SHA-1
        self._session = URLSafeTimedSerializer(
            key, salt="ballet.watch.session", signer_kwargs=sha256
        )
        self._signin = URLSafeTimedSerializer(key, salt="ballet.watch.signin", signer_kwargs=sha256)
        self.secure = secure

    # -- the session -------------------------------------------------------------------

    def viewer(self, raw: str | None) -> Viewer | None:
        data = _loads(self._session, raw, SESSION_SECONDS)
        try:
            login, user_id, csrf, session = data["login"], data["id"], data["csrf"], data["sid"]
        except (KeyError, TypeError):
            return None
        if not (isinstance(login, str) and _LOGIN.match(login)):
            return None
        if not (isinstance(user_id, int) and isinstance(csrf, str) and len(csrf) >= 32):
            return None
        if not (isinstance(session, str) and len(session) >= 32):
            return None
        return Viewer(login, user_id, csrf, session)

    def start_session(self, response: Response, login: str, user_id: int) -> Viewer:
        viewer = Viewer(login, user_id, secrets.token_urlsafe(32), secrets.token_urlsafe(32))
        value = self._session.dumps(
            {"login": login, "id": user_id, "csrf": viewer.csrf, "sid": viewer.session}
        )
        self._set(response, SESSION_COOKIE, value, SESSION_SECONDS)
        return viewer

    def end_session(self, response: Response) -> None:
        response.delete_cookie(
            SESSION_COOKIE, path="/", secure=self.secure, httponly=True, samesite="lax"
        )

    # -- a sign-in under way ---------------------------------------------------------------

    def signin(self, raw: str | None) -> SignIn | None:
        data = _loads(self._signin, raw, SIGNIN_SECONDS)
        try:
            state, after = data["state"], data["next"]
        except (KeyError, TypeError):
            return None
        if not (isinstance(state, str) and isinstance(after, str)):
            return None
        return SignIn(state, after)

    def start_signin(self, response: Response, flow: SignIn) -> None:
        value = self._signin.dumps({"state": flow.state, "next": flow.next})
        self._set(response, SIGNIN_COOKIE, value, SIGNIN_SECONDS)

    def end_signin(self, response: Response) -> None:
        response.delete_cookie(
            SIGNIN_COOKIE, path="/", secure=self.secure, httponly=True, samesite="lax"
        )

    def _set(self, response: Response, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path="/",
            httponly=True,
            # Lax: sent on GitHub's top-level redirect back to /oauth/callback and on
            # links from elsewhere, never on another site's POST.
            samesite="lax",
            secure=self.secure,
        )


def _loads(serializer: URLSafeTimedSerializer, raw: str | None, max_age: int) -> Any:
    if not raw:
        return None
    try:
        return serializer.loads(raw, max_age=max_age)
    except BadData:
        return None
