"""A ticket's money in the engine: the caps a session is given, the gateway's meter
winning over what the CLI and the agent said, a cap that stopped a session becoming
a question, and `/ballet budget +N` raising the ticket's cap (core/budgets.py)."""

from __future__ import annotations

import pytest
from ballet.core.commands import Command, CommandError, parse_commands
from ballet.core.config import Budget
from ballet.core.effects import PostComment, PostReply, PostReportComment, SetLabels, StartSession
from ballet.core.record import decode_record, encode_record
from ballet.core.report import Usage
from ballet.core.spend import Cap, SessionBudget, Spend
from core_kit import Ticket, agent, make_pipeline

METERED = Spend(
    requests=3,
    input_tokens=1000,
    cache_read_tokens=4000,
    cache_write_tokens=500,
    output_tokens=700,
    cost_usd=0.3,
)


def capped(**budget: float) -> Ticket:
    return Ticket(pipeline=make_pipeline(budget=Budget(**budget)))


def question_text(t: Ticket) -> str:
    (comment,) = [c for c in t.of(PostComment) if c.marker.kind == "question"]
    return comment.body


def test_a_session_is_given_its_own_cap_and_the_ticket_cap_with_what_was_spent() -> None:
    t = capped(cost_usd=5, session_cost_usd=1)
    assert t.session().budget == SessionBudget(session_usd=1, ticket_usd=5, ticket_spent_usd=0)
    t.finish("done", spend=METERED)
    assert t.session().budget == SessionBudget(session_usd=1, ticket_usd=5, ticket_spent_usd=0.3)


def test_without_a_budget_a_session_has_no_caps() -> None:
    budget = Ticket().session().budget
    assert budget == SessionBudget() and budget.caps(1e6) == ()


def test_the_gateway_meter_wins_over_the_cli_count_and_the_agent_claim() -> None:
    t = capped(cost_usd=5)
    claim = {"usage": Usage(input_tokens=1, output_tokens=1, cost_usd=9.0)}
    t.finish("done", report_fields=claim, usage=Usage(cost_usd=8.0), spend=METERED)
    run = t.rec.history[0]
    assert t.rec.cost_used == pytest.approx(0.3)
    assert run.spend == METERED
    assert run.usage == Usage(input_tokens=5500, output_tokens=700, cost_usd=0.3)
    body = t.one(PostReportComment).body
    assert (
        "Spend: 1000 in, 4000 cache read, 500 cache write, 700 out tokens in 3 model "
        "requests, $0.30" in body
    )
    assert "Ticket so far: $0.30 of its $5.00 cap" in body
    assert "Usage:" not in body and "$9.00" not in body


def test_without_the_gateway_the_cli_count_still_counts() -> None:
    t = capped(cost_usd=5)
    t.finish("done", report_fields={"usage": Usage(cost_usd=9.0)}, usage=Usage(cost_usd=0.5))
    assert t.rec.cost_used == 0.5 and t.rec.history[0].spend is None


def test_an_unpriced_model_shows_price_unknown_not_zero_dollars() -> None:
    t = Ticket()
    unpriced = Spend(requests=2, input_tokens=10, output_tokens=5, unpriced_requests=2)
    t.finish("done", spend=unpriced)
    t.finish("approve", spend=METERED + Spend(requests=1, unpriced_requests=1))
    bodies = [c.body for c in t.of(PostReportComment)]
    assert "out tokens in 4 model requests, $0.30 + price unknown for 1 request" in bodies[0]
    assert "Ticket so far: $0.30 + price unknown for 3 requests" in bodies[0]
    assert t.rec.unpriced_requests == 3


def test_a_ticket_cap_that_stopped_a_session_asks_a_writer_to_raise_it() -> None:
    # The stage routes `budget` elsewhere: a cap is a person's decision all the same.
    p = make_pipeline((agent("implement", next={"budget": "$failed"}),), budget=Budget(cost_usd=5))
    t = Ticket(pipeline=p)
    cap = Cap(scope="ticket", limit_usd=5, spent_usd=5.12)
    t.finish("budget", "a cap refused a model request", spend=METERED, cap_reached=cap)
    assert t.rec.status == "waiting" and t.rec.waiting and t.rec.waiting.kind == "question"
    assert "ballet:question" in t.one(SetLabels).labels and not t.of(StartSession)
    assert t.rec.history[0].outcome == "budget"
    said = t.rec.waiting.reason
    assert "the `implement` session stopped: this ticket's cost cap ($5.00) is reached" in said
    assert "$5.12 spent (this session: $0.30)" in said
    assert "`/ballet budget +5` raises this ticket's cap by $5, then `/ballet retry`" in said
    assert said.replace("`", "") in question_text(t).replace("`", "")
    assert "a question: a cost cap stopped the session" in t.one(PostReportComment).body


def test_a_report_of_outcome_budget_without_a_cap_is_a_question_too() -> None:
    t = Ticket()
    t.finish("budget")
    assert t.rec.waiting and "stopped at a cost cap" in t.rec.waiting.reason


def test_a_session_cap_is_lifted_by_a_retry() -> None:
    t = capped(session_cost_usd=2)
    t.finish("budget", cap_reached=Cap(scope="session", limit_usd=2, spent_usd=2.01))
    said = t.rec.waiting.reason if t.rec.waiting else ""
    assert "this session's cost cap ($2.00) is reached: $2.01 spent" in said
    assert "`/ballet retry` runs the stage again in a new session" in said
    t.command("/ballet retry")
    assert t.session().budget.session_usd == 2


@pytest.mark.parametrize(
    ("scope", "setting"),
    [
        ("repository", "BALLET_BUDGET_REPOSITORY_MONTHLY_USD"),
        ("installation", "BALLET_BUDGET_INSTALLATION_MONTHLY_USD"),
    ],
)
def test_a_monthly_cap_says_no_command_lifts_it(scope: str, setting: str) -> None:
    t = Ticket()
    t.finish("budget", cap_reached=Cap(scope=scope, limit_usd=100, spent_usd=100.5))  # type: ignore[arg-type]
    said = t.rec.waiting.reason if t.rec.waiting else ""
    assert f"this {scope}'s monthly cost cap ($100.00) is reached: $100.50 spent" in said
    assert "no command lifts it" in said and setting in said and "next month" in said
    assert "/ballet budget" not in said


def test_a_writer_raises_the_ticket_cap_and_a_retry_goes_on_with_it() -> None:
    t = capped(cost_usd=5)
    t.finish(
        "budget",
        spend=Spend(cost_usd=5.12),
        cap_reached=Cap(scope="ticket", limit_usd=5, spent_usd=5.12),
    )
    t.command("/ballet budget +5", author="bob")
    reply = t.one(PostReply).body
    assert "@bob raised this ticket's cost cap by $5.00 to $10.00" in reply
    assert "(the pipeline's $5.00 + $5.00 added by writers); $5.12 spent so far" in reply
    assert "`/ballet retry` runs the stage again" in reply
    assert t.rec.status == "waiting" and not t.of(StartSession)  # the cap alone runs nothing
    t.command("/ballet budget +2.50")
    assert t.rec.budget_added_usd == 7.5 and t.rec.cost_cap_usd == 12.5
    t.command("/ballet retry")
    spec = t.session()
    assert spec.stage == "implement"
    assert spec.budget == SessionBudget(ticket_usd=12.5, ticket_spent_usd=5.12)


def test_the_cost_budget_checked_between_sessions_says_how_to_raise_it() -> None:
    t = capped(cost_usd=1)
    t.finish("done", spend=Spend(cost_usd=1.25))
    said = t.rec.waiting.reason if t.rec.waiting else ""
    assert "the cost budget ($1.00) is used up ($1.25)" in said
    assert "`/ballet budget +5` raises this ticket's cap by $5" in said
    assert not t.of(StartSession)
    t.command("/ballet budget +1")
    t.command("/ballet retry")
    assert t.session().stage == "review" and t.session().budget.ticket_usd == 2


def test_while_a_session_runs_a_raise_counts_from_the_next_session() -> None:
    t = capped(cost_usd=5)
    t.command("/ballet budget +1")
    assert "The session running now keeps the cap it started with" in t.one(PostReply).body
    t.finish("done")
    assert t.session().budget.ticket_usd == 6


def test_raising_needs_a_cost_cap_and_write_permission() -> None:
    t = Ticket()
    t.command("/ballet budget +5")
    assert "this ticket has no cost cap to raise" in t.one(PostReply).body
    assert t.rec.budget_added_usd == 0
    t = capped(cost_usd=5)
    t.command("/ballet budget +5", author="eve", permission="read")
    assert "it needs write permission" in t.one(PostReply).body
    assert t.rec.cost_cap_usd == 5


def test_what_writers_added_and_each_session_spend_survive_the_tracking_comment() -> None:
    t = capped(cost_usd=5)
    t.finish("done", spend=METERED)
    t.command("/ballet budget +3")
    back = decode_record(encode_record(t.rec))
    assert back.budget_added_usd == 3 and back.history[0].spend == METERED


@pytest.mark.parametrize(
    ("line", "usd"), [("+5", 5.0), ("+2.50", 2.5), ("+$3", 3.0), ("+ 7", 7.0), ("+10000", 1e4)]
)
def test_budget_amounts_parse(line: str, usd: float) -> None:
    assert parse_commands(f"/ballet budget {line}") == (Command(verb="budget", usd=usd),)


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("/ballet budget", "`/ballet budget` needs an amount"),
        ("/ballet budget five", "`five` is not an amount in dollars"),
        ("/ballet budget -3", "a cap can only be raised"),
        ("/ballet budget 5", "the `+` says the amount is added to the cap"),
        ("/ballet budget +0", "more than $0 and at most $10,000"),
        ("/ballet budget +20000", "more than $0 and at most $10,000"),
        ("/ballet budget +1.234", "is not an amount in dollars"),
    ],
)
def test_bad_budget_lines_say_what_to_write(line: str, says: str) -> None:
    (parsed,) = parse_commands(line)
    assert isinstance(parsed, CommandError)
    assert says in parsed.message and "write `/ballet budget +5`" in parsed.message
