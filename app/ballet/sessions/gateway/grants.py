"""A session's tokens: what it holds in place of each provider key.

Each token is random (`secrets.token_urlsafe(32)`, 256 bits), made when the
session starts and known only to that session's gateway listener, which is
closed and its socket removed when the session ends: a token is worth nothing
elsewhere or later. Checked in constant time against every grant of the path's
provider.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ballet.core.provider_keys import Provider
from ballet.sessions.gateway.forms import HeaderForm, form_of


@dataclass(frozen=True)
class Grant:
    name: str  # the variable: the session's token and the real key both go by it
    provider: Provider
    token: str
    key: str  # the real key, never in the session
    form: HeaderForm

    def __repr__(self) -> str:  # never the key or the token
        return f"Grant({self.name}, {self.provider})"


class SessionGrants:
    def __init__(self, grants: Iterable[Grant]) -> None:
        self._grants = tuple(grants)

    @classmethod
    def issue(cls, keys: Mapping[str, tuple[Provider, str]]) -> SessionGrants:
        """A fresh token for each key variable: {name: (provider, real key)}."""
        return cls(
            Grant(name, provider, secrets.token_urlsafe(32), key, form_of(name, provider))
            for name, (provider, key) in keys.items()
        )

    @property
    def tokens(self) -> dict[str, str]:
        """What the session holds: each key variable's token."""
        return {grant.name: grant.token for grant in self._grants}

    @property
    def providers(self) -> frozenset[Provider]:
        return frozenset(grant.provider for grant in self._grants)

    def check(self, provider: Provider, credentials: Iterable[str]) -> Grant | None:
        """The grant one of `credentials` is the token of, for this provider."""
        found = None
        for credential in credentials:
            given = credential.encode()
            for grant in self._grants:
                # Every comparison made, whatever matched: no timing says which did.
                if hmac.compare_digest(given, grant.token.encode()) and grant.provider == provider:
                    found = grant
        return found
