"""Spend adds up, and a cap refuses the next request once its spend reaches its limit."""

from __future__ import annotations

from ballet.core.spend import Cap, SessionBudget, Spend, first_reached


def test_spend_adds_up_and_says_when_a_price_was_unknown() -> None:
    one = Spend(requests=1, input_tokens=10, cache_read_tokens=5, output_tokens=3, cost_usd=0.5)
    two = Spend(requests=1, input_tokens=1, cache_write_tokens=2, unpriced_requests=1)
    total = one + two
    assert total.requests == 2 and total.all_input_tokens == 18 and total.output_tokens == 3
    assert total.cost_usd == 0.5 and total.price_unknown and not one.price_unknown


def test_the_narrowest_reached_cap_refuses() -> None:
    caps = [
        Cap(scope="installation", limit_usd=100, spent_usd=100),
        Cap(scope="ticket", limit_usd=5, spent_usd=5.12),
        Cap(scope="session", limit_usd=2, spent_usd=1.99),
    ]
    reached = first_reached(caps)
    assert reached is not None and reached.scope == "ticket"
    assert reached.says() == "this ticket's cost cap ($5.00) is reached: $5.12 spent"
    assert first_reached([Cap(scope="session", limit_usd=2, spent_usd=1.99)]) is None


def test_a_session_s_budget_counts_its_own_spend_into_the_ticket_s() -> None:
    budget = SessionBudget(session_usd=1.0, ticket_usd=5.0, ticket_spent_usd=4.5)
    session, ticket = budget.caps(0.5)
    assert (session.scope, session.spent_usd, session.reached) == ("session", 0.5, False)
    assert (ticket.scope, ticket.spent_usd, ticket.reached) == ("ticket", 5.0, True)
    assert SessionBudget().caps(10.0) == ()
