"""What an installation token may reach: some repositories, some permissions.

GitHub mints an installation token for all of the installation's repositories
with all of the App's permissions unless the request names fewer
(`POST /app/installations/{id}/access_tokens` with `repositories` and
`permissions`). Ballet names fewer wherever a step's reach is known: a session's
git (its clone, fetches and push) gets a token for the one repository it
touches, able to write its contents and nothing else; so a token that leaks
from a push cannot comment, merge, or reach another repository. A scope may also
keep every repository and name fewer permissions (`everywhere`: GitHub's request
without `repositories`). The scopes per step are listed in docs/security.md.

A token's scope is part of its cache key (githubkit's, sealed in Redis), so
every worker shares one token per scope, as it shares one per installation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, cast

from githubkit_schemas.latest.types import AppPermissionsType

Access = Literal["read", "write"]

# A session's git, and Ballet's own branch writes by git: contents only.
GIT_PUSH: Mapping[str, Access] = {"contents": "write"}
# A ticket's work on GitHub's API: its branch, pull request, comments, labels,
# check runs and the merge (contents: write is what GitHub asks of a merge).
TICKET_API: Mapping[str, Access] = {
    "checks": "write",
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "statuses": "read",
}

# What a session job reads of its ticket (the issue, the record's comments, a
# return's failing checks and review, a companion's default branch), and the
# reconciler's look at a ticket: reading, no writing, no contents.
TICKET_READS: Mapping[str, Access] = {
    "checks": "read",
    "issues": "read",
    "pull_requests": "read",
    "statuses": "read",
}
# A ticket's lineage (its epic, the issues and pull requests it names or is named
# by) may be anywhere in the installation: read-only, issues and pull requests alone.
LINEAGE_READS: Mapping[str, Access] = {"issues": "read", "pull_requests": "read"}


class ScopeError(ValueError):
    """A scope GitHub could not mint: it says which repository or permission."""


@dataclass(frozen=True)
class TokenScope:
    """Repositories (`owner/name`, all of the installation's one account) and the
    permissions a token gets on them; `metadata: read` comes with every token."""

    repos: tuple[str, ...]  # empty: every repository of the installation (`everywhere`)
    permissions: tuple[tuple[str, Access], ...]

    @classmethod
    def of(cls, repos: Iterable[str], permissions: Mapping[str, Access]) -> TokenScope:
        """Sorted, so one reach is one cache key however it was spelled."""
        names = tuple(sorted({r.lower() for r in repos}))
        if not names:
            raise ScopeError("a token scope names at least one repository")
        owners = {name.partition("/")[0] for name in names}
        if len(owners) != 1 or any(name.count("/") != 1 for name in names):
            raise ScopeError(
                f"one token reaches the repositories of one account only, not {', '.join(names)}"
            )
        if not permissions:
            raise ScopeError("a token scope names at least one permission")
        return cls(names, tuple(sorted(permissions.items())))

    @classmethod
    def git(cls, repo: str) -> TokenScope:
        """A session's (or Ballet's) git on one repository: fetch and push, no more."""
        return cls.of((repo,), GIT_PUSH)

    @classmethod
    def ticket(cls, repos: Iterable[str]) -> TokenScope:
        """A ticket's API work on its repositories (its own and its companions)."""
        return cls.of(repos, TICKET_API)

    @classmethod
    def reads(cls, repos: Iterable[str]) -> TokenScope:
        """A session job's and the reconciler's reads of a ticket's repositories."""
        return cls.of(repos, TICKET_READS)

    @classmethod
    def everywhere(cls, permissions: Mapping[str, Access]) -> TokenScope:
        """Every repository of the installation, with these permissions alone: for
        what spans it (a ticket's lineage, the live tickets' labels)."""
        if not permissions:
            raise ScopeError("a token scope names at least one permission")
        return cls((), tuple(sorted(permissions.items())))

    def names(self) -> list[str]:
        """The repositories as GitHub's token request takes them: names without owner."""
        return [repo.partition("/")[2] for repo in self.repos]

    def github_permissions(self) -> AppPermissionsType:
        return cast(AppPermissionsType, dict(self.permissions))

    def covers(self, repo: str) -> bool:
        return not self.repos or repo.lower() in self.repos
