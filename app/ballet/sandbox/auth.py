"""Who is calling: the App (JWT), an installation (token) or a person (`sandbox-user:<login>`,
or a user access token `ghu_…` the App got for them through the OAuth web flow).

The App's JWT is verified for real with the public key of the key pair the
sandbox generated, and installation tokens expire after `token_ttl_seconds`.
A user access token acts as its user through the App: it reaches only what both
can (GitHub's intersection rule), so never more than the App's permissions.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ballet.sandbox.errors import ApiError, forbidden, not_found
from ballet.sandbox.state import AppIdentity, Repo, Sandbox, Token, permission_at_least

USER_TOKEN_PREFIX = "ghu_"

USER_PREFIX = "sandbox-user:"
# GitHub allows a JWT at most 10 minutes of life, and some clock drift on iat.
MAX_JWT_LIFETIME = 600 + 60


@dataclass(frozen=True)
class Actor:
    kind: str  # "app" | "installation" | "user" | "anonymous"
    login: str
    installation_id: int | None = None
    # A person acting through the App (a `ghu_` user access token).
    via_app: bool = False
    # An installation token asked for some repositories, or some permissions, only.
    repository_ids: frozenset[int] | None = None
    permissions: dict[str, str] | None = None

    @property
    def is_app(self) -> bool:
        return self.kind in ("app", "installation")


ANONYMOUS = Actor("anonymous", "")


def new_app_identity(app_id: int, slug: str) -> AppIdentity:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return AppIdentity(app_id, slug, secrets.token_hex(20), private_pem, public_pem)


def verify_app_jwt(app: AppIdentity, token: str, now: datetime) -> None:
    """Raise 401 unless `token` is an RS256 JWT signed by the App's key, unexpired and sane."""
    try:
        claims = jwt.decode(
            token,
            app.public_key_pem,
            algorithms=["RS256"],
            options={"require": ["iat", "exp", "iss"]},
            leeway=60,
        )
    except jwt.PyJWTError as exc:
        raise ApiError(401, f"A JSON web token could not be decoded: {exc}") from exc
    if str(claims["iss"]) != str(app.app_id):
        raise ApiError(401, f"'Issuer' claim ('iss') must be the App's id {app.app_id}")
    if int(claims["exp"]) - int(claims["iat"]) > MAX_JWT_LIFETIME:
        raise ApiError(401, "'Expiration time' claim ('exp') is too far in the future")
    if int(claims["iat"]) > now.timestamp() + 60:
        raise ApiError(401, "'Issued at' claim ('iat') must be an Integer in the past")


def issue_token(
    sandbox: Sandbox,
    installation_id: int,
    now: datetime,
    *,
    repository_ids: frozenset[int] | None = None,
    permissions: dict[str, str] | None = None,
) -> Token:
    token = Token(
        token="ghs_" + secrets.token_urlsafe(27),
        expires_at=now + timedelta(seconds=sandbox.token_ttl_seconds),
        installation_id=installation_id,
        repository_ids=repository_ids,
        permissions=permissions,
    )
    sandbox.tokens[token.token] = token
    return token


def actor_from_token(sandbox: Sandbox, token: str, now: datetime) -> Actor:
    """A user or installation token (the JWT is only accepted on /app endpoints)."""
    if token.startswith(USER_PREFIX) and len(token) > len(USER_PREFIX):
        return Actor("user", token[len(USER_PREFIX) :])
    if token.startswith(USER_TOKEN_PREFIX):
        user = sandbox.user_tokens.get(token)
        if user is None or user.expires_at <= now:
            raise ApiError(401, "Bad credentials")
        return Actor("user", user.login, via_app=True)
    found = sandbox.tokens.get(token)
    if found is None or found.expires_at <= now:
        raise ApiError(401, "Bad credentials")
    return Actor(
        "installation",
        sandbox.app.bot_login,
        found.installation_id,
        repository_ids=found.repository_ids,
        permissions=found.permissions,
    )


def actor_from_header(sandbox: Sandbox, header: str | None, now: datetime) -> Actor:
    """Parse `Authorization: token X`, `Bearer X` (REST) or `Basic` (git over HTTP)."""
    if not header:
        return ANONYMOUS
    scheme, _, value = header.partition(" ")
    scheme = scheme.lower()
    value = value.strip()
    if scheme == "basic":
        try:
            _, _, value = base64.b64decode(value).decode().partition(":")
        except ValueError as exc:
            raise ApiError(401, "Bad credentials") from exc
        return actor_from_token(sandbox, value, now)
    if scheme == "bearer" and value.count(".") == 2:
        verify_app_jwt(sandbox.app, value, now)
        return Actor("app", sandbox.app.bot_login)
    if scheme in ("token", "bearer"):
        return actor_from_token(sandbox, value, now)
    raise ApiError(401, "Bad credentials")


def can_see(actor: Actor, repo: Repo) -> bool:
    """Whether the repository exists for this caller at all (GitHub hides private ones)."""
    if actor.kind == "installation":
        return reaches(actor, repo)
    if actor.kind in ("anonymous", "app"):
        return not repo.private
    return repo.permission_of(actor.login) != "none"


def reaches(actor: Actor, repo: Repo) -> bool:
    """An installation token reaches its installation's repositories, or those of them
    it was asked for: any other is hidden from it (404), as on GitHub."""
    if actor.installation_id != repo.installation_id:
        return False
    return actor.repository_ids is None or repo.id in actor.repository_ids


# The most a user access token may do: the App has no `administration` permission.
APP_CEILING = "write"


def require(actor: Actor, repo: Repo, need: str) -> None:
    """Refuse unless the actor may act on `repo` with permission `need`; a private
    repository the actor cannot see is a 404, as on GitHub, never a 403."""
    if actor.kind == "installation":
        if not reaches(actor, repo):
            raise not_found()
        return
    if actor.kind == "app":
        if repo.private:
            raise not_found()
        raise forbidden("A JSON web token cannot act on a repository; use an installation token")
    if actor.kind == "anonymous":
        if repo.private:
            raise not_found()
        if need == "read":
            return
        raise ApiError(401, "Requires authentication")
    if not can_see(actor, repo):
        raise not_found()
    if actor.via_app and not permission_at_least(APP_CEILING, need):
        raise forbidden("Resource not accessible by integration")
    if not permission_at_least(repo.permission_of(actor.login), need):
        raise forbidden(f"Must have {need} access to repository {repo.full_name}")
