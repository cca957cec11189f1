"""GitHub's OAuth web flow, as a GitHub App's user sign-in uses it.

Three requests, over httpx: the browser goes to `{web}/login/oauth/authorize`;
GitHub brings it back with a code, which `exchange` trades for a user token
(`POST {web}/login/oauth/access_token`), and `whoami` reads who it belongs to
(`GET {api}/user`). The token is used for that one request and then dropped:
nothing Ballet shows is read with a person's token.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

import httpx

GITHUB_JSON = "application/vnd.github+json"


class SignInFailed(Exception):
    """GitHub did not sign the person in; the message says what it answered."""


@dataclass(frozen=True)
class GitHubUser:
    login: str
    id: int


def authorize_url(web_url: str, client_id: str, redirect_uri: str, state: str) -> str:
    query = urlencode({"client_id": client_id, "redirect_uri": redirect_uri, "state": state})
    return f"{web_url}/login/oauth/authorize?{query}"


async def exchange(
    http: httpx.AsyncClient,
    web_url: str,
    client_id: str,
    client_secret: str,
    code: str,
    redirect_uri: str,
) -> str:
    """The user token for GitHub's one-time `code`."""
    try:
        response = await http.post(
            f"{web_url}/login/oauth/access_token",
            data={
                "client_id": client_id,
                "client_secret": client_secret,
                "code": code,
                "redirect_uri": redirect_uri,
            },
            headers={"Accept": "application/json"},
        )
    except httpx.HTTPError as exc:
        raise SignInFailed(f"GitHub could not be reached ({type(exc).__name__})") from exc
    data = _json(response)
    token = data.get("access_token") if isinstance(data, dict) else None
    if response.status_code != 200 or not isinstance(token, str) or not token:
        # GitHub answers 200 with `error` for a used or expired code; never echo the body.
        error = data.get("error") if isinstance(data, dict) else None
        raise SignInFailed(f"GitHub refused the sign-in code ({error or response.status_code})")
    return token


async def whoami(http: httpx.AsyncClient, api_url: str, token: str) -> GitHubUser:
    try:
        response = await http.get(
            f"{api_url}/user",
            headers={"Authorization": f"Bearer {token}", "Accept": GITHUB_JSON},
        )
    except httpx.HTTPError as exc:
        raise SignInFailed(f"GitHub could not be reached ({type(exc).__name__})") from exc
    data = _json(response)
    if response.status_code != 200 or not isinstance(data, dict):
        raise SignInFailed(f"GitHub did not say who signed in ({response.status_code})")
    login, user_id = data.get("login"), data.get("id")
    if not isinstance(login, str) or not isinstance(user_id, int):
        raise SignInFailed("GitHub's answer about the user has no login or id")
    return GitHubUser(login, user_id)


def _json(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None
