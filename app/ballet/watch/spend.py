"""A repository's model spend by calendar month (UTC), for its writers.

What the model gateway metered of the repository's sessions, from the spend
ledger: this month against the operator's monthly caps (the repository's, and
its installation's, which all the installation's repositories share: a writer
whose ticket stopped at it sees why), then the last twelve months, each with its
models, the most costly first.
People who may not write to the repository get the not-found page, as for a
ticket they cannot see: spend is a writer's business (they raise caps).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response

from ballet.core.render import spent_words
from ballet.core.spend import Spend
from ballet.spend_ledger import MonthSpend, SpendLedger
from ballet.watch.access import AccessUnknown, may_write
from ballet.watch.config import WatchConfig
from ballet.watch.lookup import not_found, unavailable
from ballet.watch.render import page
from ballet.watch.state import viewer_of, watch_state

MONTHS_SHOWN = 12


@dataclass(frozen=True)
class SpendRow:
    name: str  # the month, or "provider · model"
    spend: Spend
    cost: str  # "$1.20", "price unknown", …


@dataclass(frozen=True)
class CapRow:
    name: str  # "This repository", "Its installation (all its repositories)"
    spent: str
    cap: str  # "$100.00 a month, $75.50 left", or "no monthly cap"


def cap_rows(repository: Spend, installation: Spend | None, config: WatchConfig) -> list[CapRow]:
    """This month's spend against each operator cap; the installation's only when
    Ballet knows it."""
    rows = [_cap_row("This repository", repository, config.repository_monthly_usd)]
    if installation is not None:
        name = "Its installation (all its repositories)"
        rows.append(_cap_row(name, installation, config.installation_monthly_usd))
    return rows


def _cap_row(name: str, spent: Spend, cap: float | None) -> CapRow:
    if cap is None:
        return CapRow(name, spent_words(spent.cost_usd, spent), "no monthly cap")
    left = max(cap - spent.cost_usd, 0.0)
    reached = (
        " (reached: the gateway refuses model requests until the month ends"
        " or the operator raises it)"
    )
    state = f"${left:.2f} left" if left > 0 else f"none left{reached}"
    return CapRow(name, spent_words(spent.cost_usd, spent), f"${cap:.2f} a month, {state}")


def month_rows(month: MonthSpend) -> list[SpendRow]:
    """The month's total, then each model's share."""
    rows = [SpendRow(month.month, month.total, spent_words(month.total.cost_usd, month.total))]
    for model in month.by_model:
        s = model.spend
        name = f"{model.provider} · {model.model or 'model not named'}"
        rows.append(SpendRow(name, s, spent_words(s.cost_usd, s)))
    return rows


async def repository_spend(request: Request) -> Response:
    state = watch_state(request)
    viewer = await viewer_of(request)
    repo = f"{request.path_params['owner']}/{request.path_params['repo']}"
    try:
        permission = await state.access.permission(repo, viewer)
    except AccessUnknown:
        return unavailable(request, viewer)
    if not may_write(permission):
        return not_found(request, viewer)
    ledger = SpendLedger(state.redis)
    now = datetime.now(UTC)
    installation = await state.access.installation_of(repo)
    repository_month, installation_month = await ledger.month(
        repo=repo, installation_id=installation, at=now
    )
    months = await ledger.months(repo=repo, at=now, count=MONTHS_SHOWN)
    return page(
        state.templates,
        request,
        "spend.html",
        viewer,
        sign_in=state.config.sign_in,
        repo=repo,
        caps=cap_rows(
            repository_month,
            installation_month if installation is not None else None,
            state.config,
        ),
        months=[month_rows(m) for m in months if m.total.requests],
    )
