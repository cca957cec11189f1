"""What the templates show of a record: rows, the pipeline diagram, the stage runs.

Pure: a record in, plain values out. The diagram is the core's own flowchart
(`core.render.flowchart`, the one the tracking comment draws with mermaid), read
back into stages and arrows so a page can show it as a list anyone and any
screen reader can follow, without mermaid's JavaScript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from ballet.core.github_text import Removed, clean, clean_line
from ballet.core.pages import session_path, ticket_path
from ballet.core.record import TERMINAL, Record, StageRun
from ballet.core.render import flowchart, spent_words, ticket_spend_line
from ballet.core.report import Usage
from ballet.core.routing import job_key
from ballet.core.ticket_summary import TicketSummary, summary_of

_NODE = re.compile(r'^\s+(\w+)\["(.*)"\]$')
_END = re.compile(r"^\s+(\w+)\(\((\w+)\)\)$")
_EDGE = re.compile(r'^\s+(\w+) -- "(.*)" --> (\w+)$')
_CURRENT = re.compile(r"^\s+class (\w+) current$")


@dataclass(frozen=True)
class Arrow:
    outcome: str
    to: str  # the target's label


@dataclass
class Node:
    id: str
    label: str
    end: bool  # done, failed, question: where a ticket stops
    current: bool = False
    arrows: list[Arrow] = field(default_factory=list)


@dataclass(frozen=True)
class TicketRow:
    key: str
    url: str
    title: str
    status: str
    stage: str
    waiting: str
    updated_at: datetime
    live: bool


@dataclass(frozen=True)
class RunView:
    name: str
    iteration: int
    attempt: int
    start: datetime
    end: datetime | None
    outcome: str
    usage: Usage
    spent: str  # tokens and cost, as the model gateway metered them where it did
    summary: str
    url: str | None  # its session's page; None for a person's or the platform's step


@dataclass(frozen=True)
class TicketText:
    """The ticket's title as a reader of GitHub sees it, and what Ballet's agents are
    not given of its title and body, as they are not (sessions/untrusted.py)."""

    title: str
    hidden: tuple[str, ...]  # "2 HTML comments removed from the issue body", …


def ticket_text(title: str, body: str | None) -> TicketText:
    shown = clean_line(title)
    notes = (shown.removed.note("the issue title"), _removed(body).note("the issue body"))
    return TicketText(shown.text, tuple(note for note in notes if note))


@lru_cache(maxsize=64)  # a page is seen again and again; a 64 KiB body costs ~50 ms
def _removed(body: str | None) -> Removed:
    return clean(body).removed if body else Removed()


def find_run(
    rec: Record, stage: str, iteration: int, attempt: int, phase: str | None
) -> StageRun | None:
    """The run whose session the URL's parts name (its job key, as the engine made it)."""
    wanted = job_key(rec.key, stage, iteration, attempt, phase)
    return next((run for run in reversed(rec.history) if run.job_key == wanted), None)


def row(rec: Record) -> TicketRow:
    return summary_row(summary_of(rec))


def summary_row(summary: TicketSummary) -> TicketRow:
    """A ticket's row, from its summary in the ticket index (or its record's)."""
    return TicketRow(
        key=summary.key,
        url=ticket_path(summary.repo, summary.number),
        title=summary.title,
        status=summary.status,
        stage=summary.stage,
        waiting=summary.waiting,
        updated_at=summary.updated_at,
        live=summary.live,
    )


def runs(rec: Record) -> list[RunView]:
    return [
        RunView(
            name=run_name(run),
            iteration=run.iteration,
            attempt=run.attempt,
            start=run.start,
            end=run.end,
            outcome=run.outcome or ("running" if run.end is None else "—"),
            usage=run.usage,
            spent=run_spent(run),
            summary=run.summary,
            url=session_path(rec, run),
        )
        for run in rec.history
    ]


def run_spent(run: StageRun) -> str:
    """One run's tokens and cost: the gateway's meter, else what the CLI or agent said."""
    s = run.spend
    if s is None:
        u = run.usage
        return f"{u.input_tokens} in / {u.output_tokens} out, ${u.cost_usd:.2f}"
    return (
        f"{s.input_tokens} in · {s.cache_read_tokens} cache read · {s.cache_write_tokens} "
        f"cache write · {s.output_tokens} out, {spent_words(s.cost_usd, s)}"
    )


def ticket_spent(rec: Record) -> str:
    """The ticket's sessions and spend so far, against its cost cap if it has one."""
    sessions = f"{rec.sessions_used} session{'' if rec.sessions_used == 1 else 's'}"
    return f"{sessions}, {ticket_spend_line(rec).removeprefix('Ticket so far: ')}"


def run_name(run: StageRun) -> str:
    name = run.stage + (f" · {run.phase}" if run.phase else "")
    return name + (f" · sign-off {run.role}" if run.role else "")


def diagram(rec: Record) -> list[Node]:
    """The stages and ends of the ticket's pipeline, in order, with their arrows."""
    nodes: dict[str, Node] = {}
    for line in flowchart(rec).splitlines():
        if found := _NODE.match(line):
            nodes[found[1]] = Node(found[1], found[2], end=False)
        elif found := _END.match(line):
            nodes[found[1]] = Node(found[1], found[2], end=True)
        elif (found := _EDGE.match(line)) and found[1] in nodes:
            target = nodes.get(found[3])
            nodes[found[1]].arrows.append(Arrow(found[2], target.label if target else found[3]))
        elif (found := _CURRENT.match(line)) and found[1] in nodes:
            nodes[found[1]].current = rec.status not in TERMINAL
    return list(nodes.values())
