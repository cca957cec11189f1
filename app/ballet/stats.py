"""Per-stage figures from ticket records, and a month's model spend, for `ballet stats`.

Pure: records in, a table out. A stage's runs are the runs of its id across
the records (a sign-off session counts under `signoff:<role>`); a run is
*rework* when it sent the ticket back, that is when the next run of the
ticket belongs to a later iteration (going back to an earlier stage is what
starts one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ballet.core.record import Record
from ballet.core.render import spent_words
from ballet.core.spend import Spend
from ballet.core.ticket_summary import sent_back, stage_name


@dataclass
class StageStats:
    stage: str
    runs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    rework: int = 0

    @property
    def mean_seconds(self) -> float:
        return self.seconds / self.runs if self.runs else 0.0

    @property
    def rework_rate(self) -> float:
        return self.rework / self.runs if self.runs else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "stage": self.stage,
            "runs": self.runs,
            "outcomes": dict(sorted(self.outcomes.items())),
            "mean_seconds": round(self.mean_seconds, 3),
            "rework_rate": round(self.rework_rate, 4),
        }


def stage_stats(records: Iterable[Record], since: datetime | None = None) -> list[StageStats]:
    """Finished runs that started at or after `since`, per stage, in order of first
    appearance in the pipelines (the stage order people know)."""
    table: dict[str, StageStats] = {}
    for record in records:
        for index, run in enumerate(record.history):
            if run.end is None or (since is not None and run.start < since):
                continue
            name = stage_name(run)
            stats = table.setdefault(name, StageStats(name))
            stats.runs += 1
            stats.outcomes[run.outcome or "none"] += 1
            stats.seconds += max((run.end - run.start).total_seconds(), 0.0)
            stats.rework += sent_back(record.history, index)
    return list(table.values())


def render_table(rows: list[StageStats]) -> str:
    """A plain-text table, one line per stage."""
    header = ("stage", "runs", "mean", "rework", "outcomes")
    lines = [header] + [
        (
            row.stage,
            str(row.runs),
            _duration(row.mean_seconds),
            f"{row.rework_rate:.0%}",
            ", ".join(f"{name} {count}" for name, count in row.outcomes.most_common()),
        )
        for row in rows
    ]
    return _table(lines)


def _table(lines: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the last one left as it is (free text)."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False))
        + "  "
        + line[-1]
        for line in lines
    )


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


@dataclass(frozen=True)
class ScopeSpend:
    """What one repository or installation spent on models in a month (the ledger's)."""

    scope: str  # "repository" or "installation"
    name: str  # owner/name, or the installation's id
    spend: Spend

    def as_dict(self) -> dict[str, object]:
        return {"scope": self.scope, "name": self.name, **self.spend.model_dump()}


def render_spend(month: str, rows: list[ScopeSpend]) -> str:
    """A plain-text table of a month's model spend, one line per repository or installation."""
    if not rows:
        return f"no model spend metered in {month} (UTC)"
    header = ("model spend " + month, "requests", "in", "cache read", "cache write", "out", "cost")
    lines = [header] + [
        (
            f"{row.scope} {row.name}",
            str(row.spend.requests),
            str(row.spend.input_tokens),
            str(row.spend.cache_read_tokens),
            str(row.spend.cache_write_tokens),
            str(row.spend.output_tokens),
            spent_words(row.spend.cost_usd, row.spend),
        )
        for row in rows
    ]
    return _table(lines)
