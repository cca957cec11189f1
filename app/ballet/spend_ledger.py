"""What repositories and installations spent on models, per calendar month (UTC).

The model gateway adds every metered answer here; it reads this month's
totals before forwarding a request, to hold the operator's monthly caps
(`BALLET_BUDGET_REPOSITORY_MONTHLY_USD`, `..._INSTALLATION_...`), and
`ballet stats` and the spend page read past months.

In Redis, per month, one hash per repository and per installation with the
`Spend` fields (cost in integer nano-dollars, so sums are exact), a hash of
the same per provider and model, and the set of an installation's
repositories that spent; per day (UTC) a repository's cost alone, kept
`DAYS_KEPT`, for the fleet page; and per session the same fields, kept
`SESSION_KEPT`, so a session whose worker died is still paid for by its ticket.
Keys outlive their month by about a year (`KEEP`), enough for a year-on-year look,
then go by themselves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from redis.asyncio import Redis

from ballet.core.spend import Spend

KEEP = timedelta(days=400)
DAYS_KEPT = timedelta(days=40)  # a repository's spend per day, for the fleet page
# A session's own spend, for the ticket of a session whose worker died: well past
# the longest a session runs plus the crash sweep's delay.
SESSION_KEPT = timedelta(days=7)
NANO = 1_000_000_000  # nano-dollars in a dollar
COUNTS = (
    "requests",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "unpriced_requests",
)
COST = "cost_nano_usd"


@dataclass(frozen=True)
class ModelSpend:
    provider: str
    model: str | None  # None: the answer named no model
    spend: Spend


@dataclass(frozen=True)
class MonthSpend:
    month: str  # "2026-12"
    total: Spend
    by_model: tuple[ModelSpend, ...]  # the most costly first
    repositories: tuple[str, ...] = ()  # an installation's repositories that spent


def month_of(at: datetime) -> str:
    """The calendar month (UTC) `at` falls in; a naive time is taken as UTC."""
    when = _utc(at)
    return f"{when.year:04d}-{when.month:02d}"


def months_back(at: datetime, count: int) -> list[str]:
    """`count` months, `at`'s first, then the ones before it."""
    when = _utc(at)
    year, month = when.year, when.month
    found = []
    for _ in range(count):
        found.append(f"{year:04d}-{month:02d}")
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return found


class SpendLedger:
    def __init__(self, redis: Redis, prefix: str = "ballet:spend") -> None:
        self._redis = redis
        self._prefix = prefix

    def _key(self, month: str, scope: str, name: str) -> str:
        return f"{self._prefix}:{month}:{scope}:{name}"

    async def add(
        self,
        *,
        repo: str,
        installation_id: int | None,
        provider: str,
        model: str | None,
        spend: Spend,
        at: datetime,
        session: str | None = None,
    ) -> None:
        """Adds one answer's spend to its month's totals, and to its session's
        (`session`: its job key), in one round trip."""
        month = month_of(at)
        scopes = [self._key(month, "repository", repo)]
        if installation_id is not None:
            scopes.append(self._key(month, "installation", str(installation_id)))
        figures = _figures(spend)
        async with self._redis.pipeline(transaction=True) as tx:
            if session is not None:
                # Read back only if the session's worker dies before it reports.
                for field, value in figures.items():
                    tx.hincrby(self._session_key(session), field, value)
                tx.expire(self._session_key(session), SESSION_KEPT)
            for key in scopes:
                for field, value in figures.items():
                    tx.hincrby(key, field, value)
                for field, value in figures.items():
                    tx.hincrby(f"{key}:models", json.dumps([provider, model, field]), value)
                tx.expire(key, KEEP)
                tx.expire(f"{key}:models", KEEP)
            if COST in figures:  # the fleet page's spend per day (UTC)
                day = self._day_key(at, repo)
                tx.hincrby(day, COST, figures[COST])
                tx.expire(day, DAYS_KEPT)
            if installation_id is not None:
                repositories = f"{scopes[1]}:repositories"
                tx.sadd(repositories, repo)
                tx.expire(repositories, KEEP)
            await tx.execute()

    def _session_key(self, job_key: str) -> str:
        return f"{self._prefix}:session:{job_key}"

    async def session(self, job_key: str) -> Spend:
        """What the gateway metered of one session so far (nothing: an empty Spend)."""
        # Through a pipeline, as every read here: redis-py types a bare hgetall as
        # maybe-not-awaitable.
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self._session_key(job_key))
            (found,) = await pipe.execute()
        return _spend(found)

    def _day_key(self, at: datetime, repo: str) -> str:
        when = _utc(at)
        return f"{self._prefix}:day:{when:%Y-%m-%d}:repository:{repo}"

    async def days(self, repos: list[str], at: datetime, count: int) -> dict[str, list[float]]:
        """Each repository's cost in US dollars on each of the `count` days (UTC) up to
        `at`'s, the earliest first, in one round trip."""
        days = [at - timedelta(days=back) for back in range(count - 1, -1, -1)]
        async with self._redis.pipeline(transaction=False) as pipe:
            for repo in repos:
                for day in days:
                    pipe.hget(self._day_key(day, repo), COST)
            found = await pipe.execute()
        return {
            repo: [int(raw or 0) / NANO for raw in found[i * count : (i + 1) * count]]
            for i, repo in enumerate(repos)
        }

    async def month(
        self, *, repo: str, installation_id: int | None, at: datetime
    ) -> tuple[Spend, Spend]:
        """This month's spend of the repository and of its installation (nothing spent
        for an installation that is None), in one round trip."""
        month = month_of(at)
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self._key(month, "repository", repo))
            if installation_id is not None:
                pipe.hgetall(self._key(month, "installation", str(installation_id)))
            found = await pipe.execute()
        repository = _spend(found[0])
        installation = _spend(found[1]) if installation_id is not None else Spend()
        return repository, installation

    async def months(
        self,
        *,
        repo: str | None = None,
        installation_id: int | None = None,
        at: datetime,
        count: int = 12,
    ) -> list[MonthSpend]:
        """The spend of one repository or one installation (give one of them) in the
        `count` months up to `at`'s, latest first, in one round trip."""
        if (repo is None) == (installation_id is None):
            raise ValueError("SpendLedger.months: give either repo or installation_id")
        scope, name = (
            ("repository", repo) if repo is not None else ("installation", str(installation_id))
        )
        names = months_back(at, count)
        async with self._redis.pipeline(transaction=False) as pipe:
            for month in names:
                key = self._key(month, scope, name)
                pipe.hgetall(key)
                pipe.hgetall(f"{key}:models")
                pipe.smembers(f"{key}:repositories")
            found = await pipe.execute()
        return [
            MonthSpend(
                month=month,
                total=_spend(found[3 * i]),
                by_model=_by_model(found[3 * i + 1]),
                repositories=tuple(sorted(_text(r) for r in found[3 * i + 2])),
            )
            for i, month in enumerate(names)
        ]

    async def spenders(self, *, at: datetime) -> tuple[list[str], list[int]]:
        """The repositories and installations that spent in `at`'s month, sorted; for
        reports such as `ballet stats` (it scans the month's keys), never on a request."""
        month = month_of(at)
        repositories: set[str] = set()
        installations: set[int] = set()
        head = f"{self._prefix}:{month}:"
        async for raw in self._redis.scan_iter(match=f"{_glob_escape(head)}*", count=500):
            scope, _, name = _text(raw).removeprefix(head).partition(":")
            if scope == "repository" and not name.endswith(":models"):
                repositories.add(name)
            elif scope == "installation" and name.isdigit():
                installations.add(int(name))
        return sorted(repositories), sorted(installations)


def _utc(at: datetime) -> datetime:
    """`at` in UTC; a naive time is taken as UTC already."""
    return at.astimezone(UTC) if at.tzinfo is not None else at


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _figures(spend: Spend) -> dict[str, int]:
    figures = {name: int(getattr(spend, name)) for name in COUNTS}
    figures[COST] = round(spend.cost_usd * NANO)
    return {name: value for name, value in figures.items() if value}


def _spend(fields: dict[bytes | str, bytes | str]) -> Spend:
    values = {_text(name): int(value) for name, value in fields.items()}
    return Spend(
        **{name: values.get(name, 0) for name in COUNTS},
        cost_usd=values.get(COST, 0) / NANO,
    )


def _by_model(fields: dict[bytes | str, bytes | str]) -> tuple[ModelSpend, ...]:
    grouped: dict[tuple[str, str | None], dict[bytes | str, bytes | str]] = {}
    for field, value in fields.items():
        provider, model, name = json.loads(field)
        grouped.setdefault((provider, model), {})[name] = value
    rows = [ModelSpend(provider, model, _spend(f)) for (provider, model), f in grouped.items()]
    return tuple(sorted(rows, key=lambda row: (-row.spend.cost_usd, row.provider, row.model or "")))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
