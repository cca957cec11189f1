"""A ticket's money: its caps, what writers add to them, and what a reached cap asks.

The model gateway enforces the caps while a session runs (`core/spend.py`); the
engine decides them when it starts a session (`session_budget`), stops starting
sessions once the ticket's are used up (`over_budget`), and turns a session a
cap stopped (outcome `budget`) into a question that says what a writer can do.

A ticket's cost cap is the pipeline's `budget.cost_usd` plus what writers added
with `/ballet budget +N`. A pipeline without a cost cap has none to raise: the
command is refused rather than inventing one, since such a ticket is stopped
only by a session cap (a retry gets a fresh one) or a monthly cap (the
operator's, which no command lifts).
"""

from __future__ import annotations

from ballet.core import render
from ballet.core.commands import Command
from ballet.core.events import CommandIssued
from ballet.core.record import Record
from ballet.core.spend import Cap, SessionBudget, Spend
from ballet.core.tx import Tx

# The outcome a session ends with when a cap refused one of its model requests.
BUDGET_OUTCOME = "budget"
MONTHLY_SETTINGS = {
    "repository": "BALLET_BUDGET_REPOSITORY_MONTHLY_USD",
    "installation": "BALLET_BUDGET_INSTALLATION_MONTHLY_USD",
}


def session_budget(rec: Record) -> SessionBudget:
    """The caps the gateway enforces for a session the ticket starts now."""
    return SessionBudget(
        session_usd=rec.pipeline.budget.session_cost_usd,
        ticket_usd=rec.cost_cap_usd,
        ticket_spent_usd=rec.cost_used,
    )


def over_budget(rec: Record) -> str:
    """Why no further session may start (the count, or the ticket's cost), or ""."""
    budget = rec.pipeline.budget
    if budget.sessions is not None and rec.sessions_used >= budget.sessions:
        return (
            f"the session budget ({budget.sessions} sessions) is used up; "
            "answer to allow one more session"
        )
    cap = rec.cost_cap_usd
    if cap is not None and rec.cost_used >= cap:
        return f"the cost budget (${cap:.2f}) is used up (${rec.cost_used:.2f}); {RAISE_TICKET_CAP}"
    return ""


RAISE_TICKET_CAP = (
    "a writer can raise it: `/ballet budget +5` raises this ticket's cap by $5, "
    "then `/ballet retry` runs the stage again"
)


def stopped_at_a_cap(outcome: str, cap: Cap | None) -> bool:
    return cap is not None or outcome == BUDGET_OUTCOME


def cap_question(stage: str, cap: Cap | None, spend: Spend | None) -> str:
    """The question a session stopped by a cap raises: the cap, what was spent, and
    what a writer can do about it."""
    this = ""
    if spend is not None:
        this = f" (this session: {render.spent_words(spend.cost_usd, spend)})"
    if cap is None:
        return (
            f"the `{stage}` session stopped at a cost cap{this}; if it was this ticket's, "
            f"{RAISE_TICKET_CAP}"
        )
    said = f"the `{stage}` session stopped: {cap.says()}{this}"
    if cap.scope == "ticket":
        return f"{said}; {RAISE_TICKET_CAP}"
    if cap.scope == "session":
        return (
            f"{said}; `/ballet retry` runs the stage again in a new session with a cap of "
            f"its own (the pipeline's `budget.session_cost_usd` in .ballet.yml sets it for "
            "tickets started after a change)"
        )
    return (
        f"{said}; no command lifts it: it is the operator's setting "
        f"{MONTHLY_SETTINGS[cap.scope]}, and it resets at the start of next month (UTC). "
        "`/ballet retry` runs the stage again once it allows"
    )


def raise_ticket_cap(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    """`/ballet budget +N`: the ticket's cost cap goes up by $N; the reply says the new
    cap and what the ticket spent."""
    rec = tx.rec
    base = rec.pipeline.budget.cost_usd
    if base is None or cmd.usd is None:
        return (
            "this ticket has no cost cap to raise: its pipeline sets no `budget.cost_usd`. "
            "A session cap ends only that session (`/ballet retry` starts one with a cap of "
            "its own); a monthly cap is the operator's."
        )
    tx.set(budget_added_usd=round(rec.budget_added_usd + cmd.usd, 2))
    cap = tx.rec.cost_cap_usd
    assert cap is not None
    added = tx.rec.budget_added_usd
    w = rec.waiting
    if rec.status == "running":
        then = "The session running now keeps the cap it started with; the next one has the new."
    elif w is not None and w.kind == "question":
        then = "`/ballet retry` runs the stage again."
    else:
        then = "The ticket's next session has it."
    tx.reply(
        ev.comment_id,
        f"budget@v{rec.version + 1}",
        f"@{ev.author} raised this ticket's cost cap by ${cmd.usd:.2f} to ${cap:.2f} "
        f"(the pipeline's ${base:.2f} + ${added:.2f} added by writers); "
        f"${rec.cost_used:.2f} spent so far. {then}",
    )
    return None
