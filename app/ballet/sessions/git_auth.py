"""How a GitHub installation token reaches git without landing in any file.

The token goes into the environment of the one git process that fetches or
pushes, as configuration git reads from `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/
`GIT_CONFIG_VALUE_n` (git ≥ 2.31): not on its command line (visible in `ps`),
not in `.git/config` of the mirror or a clone (readable by sessions).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping

from ballet.sessions.git import with_config

# Given `owner/name`, a short-lived token for it, or None to go unauthenticated
# (public repositories, local test remotes). The lead wires installation tokens.
GitAuth = Callable[[str], Awaitable[str | None]]


async def anonymous(repo: str) -> str | None:
    return None


def static_token(token: str) -> GitAuth:
    async def auth(repo: str) -> str | None:
        return token

    return auth


def auth_environment(env: Mapping[str, str], token: str | None) -> dict[str, str]:
    """`env` plus what makes git send the token as GitHub expects it."""
    if token is None:
        return dict(env)
    return with_config(env, {"http.extraHeader": f"Authorization: {authorization(token)}"})


def authorization(token: str) -> str:
    """The Authorization header's value GitHub's git endpoints take a token in."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return f"Basic {basic}"
