"""The record store: live ticket records in Redis, one writer per ticket at a time.

Per ticket, Redis holds:
- `record`: the live `Record` as JSON;
- `outbox`: the effects of committed transitions not yet carried out, in
  order. A transition's record, its effects and the id of the event that
  caused it are written in one MULTI, so a crash between saving and acting
  never loses an effect, and a retried delivery never applies its event twice;
- `applied`: ids of the events already applied (a bounded window);
- a lock, so events of one ticket are applied one at a time, in arrival order.

Indexes find a ticket from a pull request number or a branch, and remember
which installation serves a repository. A record missing from Redis is rebuilt
from the hidden state block of its tracking comment (docs/architecture.md): the
comment is written through on every transition, so GitHub is the backup. The
block keeps only the digest of the ticket's pinned text; its words are read back
from the issue while the issue still has them (core/pinned_text.py).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar, cast

from pydantic import TypeAdapter
from redis.asyncio import Redis

from ballet.core.effects import AnyEffect, MarkerKey
from ballet.core.pinned_text import restored
from ballet.core.record import Record, RecordFormatError, decode_record, split_key, ticket_key
from ballet.core.render import marker_for
from ballet.core.ticket_summary import TicketSummary
from ballet.github.errors import NotFound
from ballet.github.forge import Forge, find_comment
from ballet.github.intents import TicketTarget
from ballet.tickets.lock import TicketLock
from ballet.tickets.ticket_index import TicketIndex, queue_writes

T = TypeVar("T")
_effect: TypeAdapter[AnyEffect] = TypeAdapter(AnyEffect)
# The issue's tracking comment once the record moved to the PR ("… on #12.").
_POINTER = re.compile(r"\bon #(\d+)\b")
# Keep this many applied event ids per ticket: far more than retries could replay.
APPLIED_WINDOW = 500
# Finished tickets stay readable in Redis this long; GitHub keeps them for good.
FINISHED_TTL_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True)
class OutboxEntry:
    id: str  # unique per effect: "<ticket>@<record version>#<index>"
    effect: AnyEffect
    raw: str = ""  # as Redis holds it, to remove this entry wherever it stands


def tracking_marker(key: str) -> str:
    return marker_for(MarkerKey(ticket=key, kind="tracking").render())


class RecordStore:
    def __init__(
        self,
        redis: Redis,
        *,
        lock_timeout_seconds: float = 300.0,
        lock_wait_seconds: float = 60.0,
        prefix: str = "ballet",
        own_login: str | None = None,
    ) -> None:
        self._redis = redis
        self._p = prefix
        # The App's bot: a record is rebuilt only from its own tracking comment, never
        # from a copy of the marker and state block someone else posted (None: any).
        self._own_login = own_login
        self._lock = TicketLock(
            redis, prefix, timeout_seconds=lock_timeout_seconds, wait_seconds=lock_wait_seconds
        )

    def _k(self, kind: str, key: str) -> str:
        return f"{self._p}:{kind}:{key}"

    # -- one writer per ticket ---------------------------------------------------

    @asynccontextmanager
    async def locked(self, key: str) -> AsyncIterator[None]:
        """Hold the ticket's lock, waiters served in arrival order (tickets/lock.py).
        Its holder renews a short lease for `lock_timeout_seconds` at most, so a
        killed worker frees the ticket within seconds; waiting longer than
        `lock_wait_seconds` raises `TicketBusy`, and the job is retried later."""
        async with self._lock.hold(key):
            yield

    # -- records -------------------------------------------------------------------

    async def load(self, key: str, forge: Forge, *, pr_hint: int | None = None) -> Record | None:
        """The live record, from Redis or else rebuilt from its tracking comment."""
        raw = await self._redis.get(self._k("record", key))
        if raw is not None:
            return Record.model_validate_json(raw)
        record = await self._rebuild(key, forge, pr_hint)
        if record is None:
            return None
        # Only where nothing is stored yet: a reader without the ticket's lock (a
        # session job) may finish its rebuild after the lock's holder committed a
        # newer version, which the tracking comment has not caught up with yet.
        if await self._redis.set(self._k("record", key), record.model_dump_json(), nx=True):
            await self._index(record)
            await TicketIndex(self._redis).write(record)
            return record
        raw = await self._redis.get(self._k("record", key))
        return record if raw is None else Record.model_validate_json(raw)

    async def cached(self, key: str) -> Record | None:
        """The live record Redis holds, never rebuilt from GitHub (cheap, may be None)."""
        raw = await self._redis.get(self._k("record", key))
        return Record.model_validate_json(raw) if raw is not None else None

    async def records(self, repo: str | None = None) -> AsyncIterator[Record]:
        """Every record Redis holds (finished ones for FINISHED_TTL_SECONDS), or one
        repository's; for reports such as `ballet stats`, never for a ticket's work."""
        pattern = self._k("record", f"{_glob_escape(repo)}#*" if repo else "*")
        async for name in self._redis.scan_iter(match=pattern, count=500):
            raw = await self._redis.get(name)
            if raw is not None:
                yield Record.model_validate_json(raw)

    async def _rebuild(self, key: str, forge: Forge, pr_hint: int | None) -> Record | None:
        repo, issue = split_key(key)
        marker = tracking_marker(key)
        found: list[Record] = []
        pointed: int | None = None
        for number in dict.fromkeys(n for n in (issue, pr_hint) if n is not None):
            record, points_to = await _record_on(forge, repo, number, marker, self._own_login)
            if record is not None:
                found.append(record)
            pointed = pointed or points_to
        # Once the PR exists the full record lives there. A ticket started before
        # issue 24 left a pointer on the issue; one started since left nothing there
        # (GitHub links the PR from the issue itself, by its "Closes #N"), so the PR
        # is the one of the App's that the issue's timeline says names it.
        prs: tuple[int, ...] = ()
        pr = next((r.pr_number for r in found if r.pr_number), pointed)
        if pr is not None:
            prs = (pr,)
        elif not found and pr_hint is None:
            prs = await self._prs_naming(forge, repo, issue)
        for number in prs:
            if number in (issue, pr_hint):
                continue
            record, _ = await _record_on(forge, repo, number, marker, self._own_login)
            if record is not None:
                found.append(record)
        record = max(found, key=lambda r: r.version, default=None)
        if record is not None and record.text is not None and not record.text.known:
            record = await _with_words(forge, record)
        return record

    async def _prs_naming(self, forge: Forge, repo: str, issue: int) -> tuple[int, ...]:
        """The App's pull requests in `repo` whose text names `issue`, newest first
        (anyone may open a PR naming an issue; only the App's are worth a read)."""
        own = (self._own_login or "").casefold()
        return tuple(
            ref.number
            for ref in reversed(await forge.cross_references(repo, issue))
            if ref.is_pull
            and ref.repo.casefold() == repo.casefold()
            and (not own or ref.author.casefold() == own)
        )

    async def commit(
        self,
        record: Record,
        effects: Sequence[AnyEffect],
        event_id: str | None,
        *,
        before: Record | None = None,
        tally: bool = False,
    ) -> None:
        """Save a transition: the record, its effects to carry out, and its event id,
        with the pages' index of it (`tally`: count the transition from `before` in the
        per-stage figures; tickets/ticket_index.py)."""
        key = record.key
        entries = [
            json.dumps(
                {"id": f"{key}@{record.version}#{i}", "effect": effect.model_dump(mode="json")}
            )
            for i, effect in enumerate(effects)
        ]
        async with self._redis.pipeline(transaction=True) as tx:
            tx.set(self._k("record", key), record.model_dump_json())
            if record.status in ("done", "failed", "cancelled"):
                tx.expire(self._k("record", key), FINISHED_TTL_SECONDS)
            if entries:
                tx.rpush(self._k("outbox", key), *entries)
            if event_id is not None:
                tx.lpush(self._k("applied", key), event_id)
                tx.ltrim(self._k("applied", key), 0, APPLIED_WINDOW - 1)
                # Redeliveries come within hours; a ticket quiet for a month forgets.
                tx.expire(self._k("applied", key), FINISHED_TTL_SECONDS)
            queue_writes(tx, record, before=before, tally=tally)
            await tx.execute()
        await self._index(record)

    async def was_applied(self, key: str, event_id: str) -> bool:
        applied = await _sync_or_async(self._redis.lrange(self._k("applied", key), 0, -1))
        return any(_text(item) == event_id for item in applied)

    async def next_effect(self, key: str) -> OutboxEntry | None:
        raw = await _sync_or_async(self._redis.lindex(self._k("outbox", key), 0))
        if raw is None:
            return None
        return _entry(raw)

    async def outbox(self, key: str) -> list[OutboxEntry]:
        """Every effect still to carry out, in order (deferred ones among them)."""
        raws = await _sync_or_async(self._redis.lrange(self._k("outbox", key), 0, -1))
        return [_entry(raw) for raw in raws]

    async def remove_effect(self, key: str, entry: OutboxEntry) -> None:
        """Drop `entry`, carried out or made redundant, wherever it stands: effects
        behind a deferred one are carried out before it (tickets/drain.py)."""
        await _sync_or_async(self._redis.lrem(self._k("outbox", key), 1, entry.raw))

    async def effect_done(self, key: str, entry: OutboxEntry) -> None:
        raw = await _sync_or_async(self._redis.lindex(self._k("outbox", key), 0))
        if raw is not None and json.loads(raw)["id"] == entry.id:
            await _sync_or_async(self._redis.lpop(self._k("outbox", key)))

    # -- finding a ticket ------------------------------------------------------------

    async def _index(self, record: Record) -> None:
        repo = record.ticket.repo
        mapping: dict[str, str] = {}
        if record.pr_number is not None:
            mapping[self._k("pr", ticket_key(repo, record.pr_number))] = record.key
        if record.branch:
            mapping[self._k("branch", f"{repo}:{record.branch}")] = record.key
        for pr in record.companion_prs:  # their reviews and closing reach the ticket
            if pr.number is not None:
                mapping[self._k("pr", ticket_key(pr.repo, pr.number))] = record.key
        if mapping:
            finished = record.status in ("done", "failed", "cancelled")
            async with self._redis.pipeline(transaction=False) as tx:
                for name, value in mapping.items():
                    tx.set(name, value, ex=FINISHED_TTL_SECONDS if finished else None)
                await tx.execute()

    async def summaries(self, keys: Sequence[str]) -> list[TicketSummary]:
        """What the pages' index holds of these tickets (one round trip, no record read)."""
        return await TicketIndex(self._redis).summaries(keys)

    async def find_ticket(self, target: TicketTarget) -> str | None:
        """The ticket key a delivery is about, or None when it is no ticket's."""
        repo = target.repo
        if target.issue is not None:
            return ticket_key(repo, target.issue)
        lookups = []
        if target.pr is not None:
            lookups.append(self._k("pr", ticket_key(repo, target.pr)))
        if target.branch:
            lookups.append(self._k("branch", f"{repo}:{target.branch}"))
        for lookup in lookups:
            raw = await self._redis.get(lookup)
            if raw is not None:
                return _text(raw)
        if target.linked_issue is not None:
            # Redis lost the index: the PR body Ballet wrote says which issue it closes.
            return ticket_key(repo, target.linked_issue)
        return None

    # -- installations -------------------------------------------------------------------

    async def remember_installation(self, repo: str, installation_id: int) -> None:
        await _sync_or_async(
            self._redis.hset(self._k("installations", "by-repo"), repo, str(installation_id))
        )

    async def forget_repositories(self, repos: Sequence[str]) -> None:
        if repos:
            await _sync_or_async(self._redis.hdel(self._k("installations", "by-repo"), *repos))

    async def installation_of(self, repo: str) -> int | None:
        raw = await _sync_or_async(self._redis.hget(self._k("installations", "by-repo"), repo))
        return int(raw) if raw is not None else None


def _entry(raw: bytes | str) -> OutboxEntry:
    data = json.loads(raw)
    effect = _effect.validate_python(data["effect"])
    return OutboxEntry(id=data["id"], effect=effect, raw=_text(raw))


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def _sync_or_async(value: Awaitable[T] | T) -> T:
    # redis-py types its list and hash commands for sync and async clients at
    # once; on the asyncio client they are always awaitable.
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value


async def _with_words(forge: Forge, record: Record) -> Record:
    """The rebuilt record with its pinned text's words, read back from the issue when
    the issue still has the pinned digest. Otherwise they stay unknown, and the ticket
    starts no session until a writer adopts the issue's text (core/pinned_text.py)."""
    assert record.text is not None
    try:
        issue = await forge.get_issue(record.ticket.repo, record.ticket.number)
    except NotFound:
        return record  # deleted or transferred: its text is nobody's to adopt now
    text = restored(record.text, issue.title, issue.body)
    return record.model_copy(update={"text": text})


async def _record_on(
    forge: Forge, repo: str, number: int, marker: str, author: str | None
) -> tuple[Record | None, int | None]:
    """The record in the tracking comment on `number`, or the PR its pointer names."""
    comment = await find_comment(forge, repo, number, marker, author=author)
    if comment is None:
        return None, None
    try:
        return decode_record(comment.body), None
    except RecordFormatError:
        pointer = _POINTER.search(comment.body)
        return None, int(pointer[1]) if pointer else None
