"""`ballet stats [--repo R] [--since D] [--spend] [--json]`: per-stage figures from the
records, and this month's model spend.

Reads the ticket records in Redis (REDIS_URL, else the embedded Valkey of the
`ballet serve` running on BALLET_DATA_DIR; finished tickets stay there for 30
days) and prints, per stage, its runs, their outcomes, the mean duration and
the rework rate: the share of runs that sent the ticket back. Then what
each repository and installation spent on models this calendar month (UTC),
as the model gateway metered it (the spend ledger); `--spend` prints only that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from datetime import UTC, datetime, timedelta

from redis.exceptions import RedisError

from ballet.commands.lifecycle import add_env_file_argument, fail
from ballet.commands.serve_lock import is_served
from ballet.core.record import Record
from ballet.embedded_valkey import running_url
from ballet.queue import QueueUnavailable, connect
from ballet.settings import Settings, SettingsError, load_settings
from ballet.spend_ledger import SpendLedger, month_of
from ballet.stats import ScopeSpend, render_spend, render_table, stage_stats
from ballet.tickets.store import RecordStore

_RELATIVE = re.compile(r"^(\d+)([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", help="only this repository (owner/name)")
    parser.add_argument(
        "--since",
        help="only runs started since: a date (2026-11-01), a time (2026-11-01T12:00Z)"
        " or an age (30m, 12h, 7d, 2w)",
    )
    parser.add_argument(
        "--spend",
        action="store_true",
        help="only this month's model spend per repository and installation",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_env_file_argument(parser)


def parse_since(text: str, now: datetime) -> datetime:
    """`text` as an aware datetime; raises ValueError saying what is accepted."""
    relative = _RELATIVE.match(text.strip())
    if relative:
        amount, unit = int(relative.group(1)), _UNITS[relative.group(2)]
        return now - timedelta(**{unit: amount})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--since {text!r} is neither a date, a time nor an age: write e.g."
            " 2026-11-01, 2026-11-01T12:00Z or 7d"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def run(args: argparse.Namespace) -> int:
    try:
        url = _redis_url(load_settings(args.env_file))
        since = parse_since(args.since, datetime.now(UTC)) if args.since else None
    except (SettingsError, ValueError) as exc:
        return fail(str(exc))
    now = datetime.now(UTC)
    try:
        records, spent = asyncio.run(_read(url, args.repo, now))
    except QueueUnavailable as exc:
        return fail(str(exc), code=1)
    except RedisError as exc:
        return fail(
            f"Redis refused ballet stats ({exc}): give REDIS_URL with the user and password"
            " Ballet uses, or leave it unset to read `./run serve`'s embedded Valkey",
            code=1,
        )
    if args.spend:
        if args.json:
            rows_out = [row.as_dict() for row in spent]
            print(json.dumps({"month": month_of(now), "spend": rows_out}, indent=2))
        else:
            print(render_spend(month_of(now), spent))
        return 0
    rows = stage_stats(records, since)
    if args.json:
        print(json.dumps([row.as_dict() for row in rows], indent=2))
    elif not rows:
        scope = f" of {args.repo}" if args.repo else ""
        print(f"no finished stage runs{scope} in the records" + (" since then" if since else ""))
    else:
        print(render_table(rows))
    if not args.json and spent:
        print(f"\n{render_spend(month_of(now), spent)}")
    return 0


def _redis_url(settings: Settings) -> str:
    """REDIS_URL, else the embedded Valkey of the `ballet serve` running on the data dir
    (its password is generated per start: the log's address alone is refused)."""
    if settings.redis_url is not None:
        return settings.redis_url.get_secret_value()
    data_dir = settings.data_dir.resolve()
    url = running_url(data_dir) if is_served(data_dir) else None
    if url is None:
        raise SettingsError(
            f"REDIS_URL is not set and no `ballet serve` runs an embedded Valkey on {data_dir}:"
            " start `./run serve` (from the same directory, or with the same BALLET_DATA_DIR),"
            " or set REDIS_URL to the Redis Ballet uses"
        )
    return url


async def _read(url: str, repo: str | None, now: datetime) -> tuple[list[Record], list[ScopeSpend]]:
    redis = await connect(url)
    try:
        records = [record async for record in RecordStore(redis).records(repo)]
        return records, await _month_spend(SpendLedger(redis), repo, now)
    finally:
        await redis.aclose()


async def _month_spend(ledger: SpendLedger, repo: str | None, now: datetime) -> list[ScopeSpend]:
    """This month's spend of each repository (or `repo`) and installation (or `repo`'s)."""
    repositories, installations = await ledger.spenders(at=now)
    rows: list[ScopeSpend] = []
    for name in repositories:
        if repo is None or name == repo:
            (month,) = await ledger.months(repo=name, at=now, count=1)
            rows.append(ScopeSpend("repository", name, month.total))
    for installation in installations:
        (month,) = await ledger.months(installation_id=installation, at=now, count=1)
        if repo is None or repo in month.repositories:
            rows.append(ScopeSpend("installation", str(installation), month.total))
    return rows
