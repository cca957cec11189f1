"""`/fleet`: every repository the viewer reads, at a glance.

Live sessions with their stage, pool and age; sessions queued per agent
pool; tickets started and done per day; lead time percentiles; `ballet
stats`' rework per stage; the tickets waiting for a person, oldest first;
and, for the repositories the viewer may write to (spend is a writer's
business, as on the spend page), model spend per day and this month's
against its cap. All from the ticket index and the spend ledger: no record
is read. The page follows transitions live, as the listing does.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis
from starlette.requests import Request
from starlette.responses import Response

from ballet.core.pages import ticket_path
from ballet.core.ticket_summary import TicketSummary
from ballet.jobs.pools import POOLS_KEY, queue_depth
from ballet.spend_ledger import SpendLedger
from ballet.tickets.ticket_index import TicketIndex
from ballet.watch.access import may_write
from ballet.watch.fleet_view import (
    Chart,
    bar_chart,
    day_names,
    days_ending,
    in_words,
    percentiles,
    stage_rows,
)
from ballet.watch.render import page
from ballet.watch.state import viewer_of, watch_state

DAYS_CHARTED = 14
WINDOW_DAYS = 30  # lead times and rework: tickets done, runs started in this many days
MOST_POOLS = 64


@dataclass(frozen=True)
class RepoSpend:
    repo: str
    month_usd: float
    cap_usd: float | None

    @property
    def share(self) -> float:
        """The month's spend against the cap, 0..1 (no cap: 0)."""
        return min(self.month_usd / self.cap_usd, 1.0) if self.cap_usd else 0.0


async def fleet(request: Request) -> Response:
    state = watch_state(request)
    viewer = await viewer_of(request)
    index = TicketIndex(state.redis)
    await index.ensure_built(state.store.records())
    stamp = await index.changed()
    readable, unknown = await state.access.readable(await index.repos(), viewer)
    repos = sorted(readable)
    now = datetime.now(UTC)
    live = [s for s in await index.summaries(await index.live()) if s.repo in readable]
    charted = days_ending(now, DAYS_CHARTED)
    days = day_names(charted)
    started, done = await index.per_day(repos, [day.timestamp() for day in charted])
    lead_times = await index.lead_times(repos, (now - timedelta(days=WINDOW_DAYS)).timestamp())
    leads = percentiles(lead_times)
    counts = await index.stage_counts(repos, day_names(days_ending(now, WINDOW_DAYS)))
    writable = [repo for repo in repos if may_write(readable[repo])]
    spend = await _spend(state.redis, writable, now, state.config.repository_monthly_usd)
    return page(
        state.templates,
        request,
        "fleet.html",
        viewer,
        sign_in=state.config.sign_in,
        live_stamp=stamp,
        unknown=unknown,
        repos=len(repos),
        sessions=_sessions(live, now),
        pools=await _pools(state.redis),
        flow=bar_chart(
            "Tickets started and done per day",
            days,
            [("started", started), ("done", done)],
        ),
        leads=[(p, in_words(v)) for p, v in zip(("p50", "p90", "p99"), leads, strict=False)],
        done_count=len(lead_times),
        window=WINDOW_DAYS,
        stages=stage_rows(counts),
        waiting=sorted(
            (s for s in live if s.waits_for_person),
            key=lambda s: s.waiting_since or s.updated_at,
        ),
        paths={s.key: ticket_path(s.repo, s.number) for s in live},
        spend=spend,
        spend_chart=await _spend_chart(state.redis, writable, now, days),
        now=now,
    )


def _sessions(live: list[TicketSummary], now: datetime) -> list[tuple[TicketSummary, str]]:
    """The sessions running or queued now, the longest-running first, with their age."""
    running = sorted(
        ((s, s.session.started) for s in live if s.session is not None), key=lambda p: p[1]
    )
    return [(s, in_words((now - started).total_seconds())) for s, started in running]


async def _pools(redis: Redis) -> list[tuple[str, int]]:
    members: set[bytes] = await redis.smembers(POOLS_KEY)  # type: ignore[misc]
    names = sorted(m.decode() for m in members)[:MOST_POOLS] or ["default"]
    now = time.time()
    depths = await asyncio.gather(*(queue_depth(redis, pool, now) for pool in names))
    return [(pool, queued) for pool, (queued, _) in zip(names, depths, strict=True)]


async def _spend(
    redis: Redis, repos: list[str], now: datetime, cap: float | None
) -> list[RepoSpend]:
    ledger = SpendLedger(redis)
    months = await asyncio.gather(
        *(ledger.month(repo=repo, installation_id=None, at=now) for repo in repos)
    )
    rows = [RepoSpend(repo, m.cost_usd, cap) for repo, (m, _) in zip(repos, months, strict=True)]
    return sorted((r for r in rows if r.month_usd or r.cap_usd), key=lambda r: -r.month_usd)


async def _spend_chart(redis: Redis, repos: list[str], now: datetime, days: list[str]) -> Chart:
    by_repo = await SpendLedger(redis).days(repos, now, len(days))
    totals = [sum(values[i] for values in by_repo.values()) for i in range(len(days))]
    return bar_chart("Model spend per day (US$)", days, [("spent", totals)], words="${:.2f}")
