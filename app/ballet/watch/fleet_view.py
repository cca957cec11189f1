"""What the fleet page shows, from the index's figures: pure, plain values out.

Charts are bars laid out here (positions in SVG user units) and drawn by the
template, so every label and number goes through Jinja's autoescape. Lead
time percentiles are nearest-rank; the per-stage table is `ballet stats`'
(`stats.StageStats`) over the index's tallies.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ballet.stats import StageStats
from ballet.tickets.ticket_index import StageCounts

CHART_WIDTH = 560
CHART_HEIGHT = 140
LABEL_SPACE = 18  # under the bars: the day's label


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    value: str  # as a screen reader hears it and a tooltip shows it
    series: int  # 0, 1: its colour


@dataclass(frozen=True)
class Chart:
    title: str
    series: tuple[str, ...]
    labels: tuple[tuple[float, str], ...]  # (x, "12-07") under every few bars
    bars: tuple[Bar, ...]
    peak: str  # the top of the scale, said in words
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT


def days_ending(now: datetime, count: int) -> list[datetime]:
    """`count` days (UTC midnights) up to `now`'s, the earliest first."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return [today - timedelta(days=back) for back in range(count - 1, -1, -1)]


def day_names(days: Sequence[datetime]) -> list[str]:
    return [f"{day:%Y-%m-%d}" for day in days]


def bar_chart(
    title: str,
    days: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    words: str = "{:g}",
) -> Chart:
    """Bars per day, the series side by side; `words` formats a value."""
    peak = max((v for _, values in series for v in values), default=0) or 1
    slot = CHART_WIDTH / max(len(days), 1)
    width = slot * 0.8 / max(len(series), 1)
    usable = CHART_HEIGHT - LABEL_SPACE
    bars = []
    for s, (name, values) in enumerate(series):
        for i, value in enumerate(values):
            height = usable * value / peak
            bars.append(
                Bar(
                    x=round(i * slot + slot * 0.1 + s * width, 1),
                    y=round(usable - height, 1),
                    width=round(width, 1),
                    height=round(height, 1),
                    value=f"{days[i]}: {name} {words.format(value)}",
                    series=s,
                )
            )
    every = max(1, math.ceil(len(days) / 7))
    labels = tuple(
        (round(i * slot + slot / 2, 1), day[5:]) for i, day in enumerate(days) if i % every == 0
    )
    return Chart(title, tuple(n for n, _ in series), labels, tuple(bars), words.format(peak))


def percentiles(values: Sequence[float], wanted: Sequence[int] = (50, 90, 99)) -> list[float]:
    """Nearest-rank percentiles of `values` (none: an empty list)."""
    if not values:
        return []
    ordered = sorted(values)
    return [ordered[max(math.ceil(p / 100 * len(ordered)) - 1, 0)] for p in wanted]


def in_words(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def stage_rows(counts: dict[str, StageCounts]) -> list[StageStats]:
    """The index's tallies as `ballet stats`' rows (runs, mean, rework, outcomes)."""
    return [
        StageStats(
            stage=stage,
            runs=c.runs,
            outcomes=Counter(c.outcomes),
            seconds=c.milliseconds / 1000,
            rework=c.rework,
        )
        for stage, c in counts.items()
        if c.runs
    ]
