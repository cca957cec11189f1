"""What sessions spend on models, and the caps that stop them.

Ballet's model gateway (`sessions/gateway/`) meters every answer a provider
gives a session, from the provider's own usage fields, and prices it; the
agent's report and the CLI's own count are never what a budget is judged on.
The caps are decided here and enforced by the gateway before it forwards a
request: a request is refused once any cap's spend has reached its limit.
A stream already under way is never cut, so a cap may be overrun by at most
the answer in flight.

Scopes: a session's own cap and the ticket's (the pipeline's `budget`, raised
by `/ballet budget +N`) travel with the session's spec (`SessionBudget`); a
repository's and an installation's calendar-month caps are the operator's and
are read, with this month's spend, when a request is checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CapScope = Literal["session", "ticket", "repository", "installation"]
SCOPE_WORDS: dict[CapScope, str] = {
    "session": "this session's cost cap",
    "ticket": "this ticket's cost cap",
    "repository": "this repository's monthly cost cap",
    "installation": "this installation's monthly cost cap",
}


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Spend(Frozen):
    """Tokens and cost as the provider's answers said them, summed over requests."""

    requests: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)  # fresh input, not read from a cache
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)  # reasoning tokens included
    cost_usd: float = Field(default=0.0, ge=0)
    # Answers of a model no price is known for: counted in tokens, not in cost.
    unpriced_requests: int = Field(default=0, ge=0)

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            unpriced_requests=self.unpriced_requests + other.unpriced_requests,
        )

    @property
    def all_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def price_unknown(self) -> bool:
        return self.unpriced_requests > 0


class Cap(Frozen):
    """One cap as it stands when a request is checked."""

    scope: CapScope
    limit_usd: float = Field(gt=0)
    spent_usd: float = Field(ge=0)  # everything this scope spent so far, this session's included

    @property
    def reached(self) -> bool:
        return self.spent_usd >= self.limit_usd

    def says(self) -> str:
        """ "this ticket's cost cap ($5.00) is reached: $5.12 spent" """
        return (
            f"{SCOPE_WORDS[self.scope]} (${self.limit_usd:.2f}) is reached: "
            f"${self.spent_usd:.2f} spent"
        )


class SessionBudget(Frozen):
    """The caps a session's gateway enforces that the ticket decides (`steps.session_spec`)."""

    session_usd: float | None = Field(default=None, gt=0)
    ticket_usd: float | None = Field(default=None, gt=0)  # the pipeline's, plus what writers added
    ticket_spent_usd: float = Field(default=0.0, ge=0)  # the ticket's sessions before this one

    def caps(self, session_spent_usd: float) -> tuple[Cap, ...]:
        """This session's and its ticket's caps, with what the session spent so far."""
        caps: list[Cap] = []
        if self.session_usd is not None:
            caps.append(
                Cap(scope="session", limit_usd=self.session_usd, spent_usd=session_spent_usd)
            )
        if self.ticket_usd is not None:
            spent = self.ticket_spent_usd + session_spent_usd
            caps.append(Cap(scope="ticket", limit_usd=self.ticket_usd, spent_usd=spent))
        return tuple(caps)


def first_reached(caps: Iterable[Cap]) -> Cap | None:
    """The cap that refuses the next request, if any: the narrowest scope first."""
    order: tuple[CapScope, ...] = ("session", "ticket", "repository", "installation")
    reached = [cap for cap in caps if cap.reached]
    return min(reached, key=lambda cap: order.index(cap.scope), default=None)
