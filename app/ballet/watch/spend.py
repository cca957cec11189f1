"""A repository's model spend by calendar month (UTC), for its writers.

What the model gateway metered of the repository's sessions, from the spend
ledger: the last twelve months, each with its models, the most costly first.
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
from ballet.watch.lookup import not_found, unavailable
from ballet.watch.render import page
from ballet.watch.state import viewer_of, watch_state

MONTHS_SHOWN = 12


@dataclass(frozen=True)
class SpendRow:
    name: str  # the month, or "provider · model"
    spend: Spend
    cost: str  # "$1.20", "price unknown", …


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
    months = await ledger.months(repo=repo, at=datetime.now(UTC), count=MONTHS_SHOWN)
    return page(
        state.templates,
        request,
        "spend.html",
        viewer,
        sign_in=state.config.sign_in,
        repo=repo,
        months=[month_rows(m) for m in months if m.total.requests],
    )
