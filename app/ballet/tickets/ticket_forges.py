"""Which forge a ticket's work on GitHub goes through: a token limited to the ticket.

A ticket's effects (its branch, pull requests, comments, labels, check runs, the
merges) touch its own repository and its companions, nothing else. The forge they
run through holds an installation token asked for those repositories alone, with
the permissions that work needs (`TokenScope.ticket`, docs/security.md), so a
request that strays to another repository of the installation is GitHub's to
refuse (404). The companions are the record's pinned pipeline's: a ticket's reach
is fixed when it starts, whatever its `.ballet.yml` says later. Work about one
repository and no ticket yet (a label's start, a config check, a base move) gets a
token for that repository alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ballet.core.record import Record, split_key
from ballet.github.forge import Forge
from ballet.github.token_scope import TokenScope
from ballet.tickets.branch_writes import BranchWriter
from ballet.tickets.interpret import Interpreter, SessionLauncher
from ballet.tickets.memo import Memo
from ballet.tickets.page_links import PageLinks


class InstallationForges(Protocol):
    """`GitHubApp.for_installation`: an installation's forge, its token limited to
    `scope` (None: the installation-wide token)."""

    def __call__(self, installation_id: int, scope: TokenScope | None = None) -> Forge: ...


@dataclass(frozen=True)
class TicketWork:
    """The forge of one ticket's (or one repository's) work and its interpreter."""

    forge: Forge
    interpreter: Interpreter
    installation_id: int


def ticket_repos(key: str, record: Record | None) -> tuple[str, ...]:
    """The repositories a ticket may touch: its own, then its pinned companions."""
    repo, _ = split_key(key)
    return (repo, *(record.pipeline.companions if record is not None else ()))


class TicketForges:
    def __init__(
        self,
        forges: InstallationForges,
        memo: Memo,
        launcher: SessionLauncher,
        *,
        clock: Callable[[], datetime],
        own_app_id: int,
        own_login: str,
        pages: PageLinks | None,
        branches: BranchWriter | None,
    ) -> None:
        self._forges = forges
        self._memo = memo
        self._launcher = launcher
        self._clock = clock
        self._own_app_id = own_app_id
        self._own_login = own_login
        self._pages = pages
        self._branches = branches

    def forge(self, installation_id: int, repos: Iterable[str]) -> Forge:
        """A forge whose every request reaches `repos` alone."""
        return self._forges(installation_id, TokenScope.ticket(repos))

    def for_ticket(self, installation_id: int, key: str, record: Record | None) -> TicketWork:
        return self.for_repos(installation_id, ticket_repos(key, record))

    def for_repos(self, installation_id: int, repos: Iterable[str]) -> TicketWork:
        forge = self.forge(installation_id, repos)
        interpreter = Interpreter(
            forge,
            self._memo,
            self._launcher,
            clock=self._clock,
            own_app_id=self._own_app_id,
            own_login=self._own_login,
            pages=self._pages,
            branches=self._branches,
        )
        return TicketWork(forge, interpreter, installation_id)
