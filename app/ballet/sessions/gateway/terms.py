"""Whose session the gateway serves, what it may spend, and where its spend is
written down: what a worker hands the gateway (server.py) for each session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ballet.core.spend import SessionBudget, Spend


class Ledger(Protocol):
    """The spend ledger's part the gateway uses (spend_ledger.SpendLedger)."""

    async def add(
        self, *, repo: str, installation_id: int | None, provider: str, model: str | None,
        spend: Spend, at: datetime, session: str | None = None,
    ) -> None: ...  # fmt: skip

    async def month(
        self, *, repo: str, installation_id: int | None, at: datetime
    ) -> tuple[Spend, Spend]: ...


Observe = Callable[[str, str | None, Spend], None]  # metrics.model_spend_observed


@dataclass(frozen=True)
class MonthlyCaps:
    repository_usd: float | None = None
    installation_usd: float | None = None


@dataclass(frozen=True)
class SessionTerms:
    """Whose session it is and what it may spend."""

    session: str  # its job key, for the log
    repo: str
    installation_id: int | None = None
    budget: SessionBudget = field(default_factory=SessionBudget)
    base_url: str | None = None  # the runtime's: its providers' upstream
