"""The outbox's drain: a ticket's committed effects carried out, in order.

Runs under the ticket's lock (tickets/service.py). What a later effect in the
outbox makes redundant is skipped and label changes fold into their net change
(`core.outbox`). An effect the core deferred (`not_before`: the "in progress"
check run and tracking edit of a session's start) is left in the outbox until
it is due; the drain carries on with the effects behind it and asks for a
drain of the ticket at that time (`later`, a deferred job). The outbox is
durable in Redis, so a worker that dies meanwhile loses nothing: any later
drain of the ticket (its next event, the reconciler's tick twice a minute)
writes it once due. A deferred effect that a later one in the outbox rewrites
(an instant session's end) is dropped unwritten.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from ballet.core import outbox
from ballet.core.effects import AnyEffect, RemoveLabels, SetLabels
from ballet.core.outbox import Coalescable
from ballet.tickets.store import OutboxEntry, RecordStore

# One event's effects and their follow-ups; far beyond any real transition.
MAX_EFFECTS_PER_EVENT = 200

# Carry out one effect of outbox entry `entry_id` (and apply what it feeds back).
CarryOut = Callable[[str, AnyEffect], Awaitable[None]]
# Drain ticket `key` again at (or soon after) a time: a deferred job.
Later = Callable[[str, datetime], Awaitable[None]]


class Drain:
    def __init__(
        self, store: RecordStore, clock: Callable[[], datetime], later: Later | None = None
    ) -> None:
        self._store = store
        self._clock = clock
        self._later = later

    async def run(self, key: str, carry_out: CarryOut) -> None:
        folded: set[str] = set()  # label changes already carried out in a net change
        for _ in range(MAX_EFFECTS_PER_EVENT):
            now = self._clock()
            entries = await self._store.outbox(key)
            step = _next(entries, now)
            if step is None:
                await self._come_back(key, entries)
                return
            index, redundant = step
            entry = entries[index]
            if not redundant and entry.id not in folded:
                for effect in self._coalesce(entry, entries[index + 1 :], folded, now):
                    await carry_out(entry.id, effect)
            await self._store.remove_effect(key, entry)
            if redundant:
                # After the start it closes is gone: a crash between the two leaves a
                # close to write, never a start shown "in progress" for good.
                later = [e.effect for e in entries[index + 1 :]]
                close = outbox.unwritten_close(entry.effect, later)
                if close is not None:
                    await self._store.remove_effect(key, entries[index + 1 + close])
        raise RuntimeError(f"ticket {key}: more than {MAX_EFFECTS_PER_EVENT} effects in a row")

    async def _come_back(self, key: str, held: list[OutboxEntry]) -> None:
        """Only deferred effects are left: drain again when the first is due."""
        times = [t for t in (getattr(e.effect, "not_before", None) for e in held) if t]
        if times and self._later is not None:
            await self._later(key, min(times))

    @staticmethod
    def _coalesce(
        entry: OutboxEntry, later: list[OutboxEntry], folded: set[str], now: datetime
    ) -> list[AnyEffect]:
        """What is left of `entry` once the effects behind it are counted (core.outbox)."""
        effect = entry.effect
        if not isinstance(effect, Coalescable):
            return [effect]
        if outbox.superseded(effect, [e.effect for e in later], now):
            return []
        if not isinstance(effect, SetLabels | RemoveLabels):
            return [effect]
        same = [e for e in later if outbox.same_issue_labels(effect, e.effect)]
        folded.update(e.id for e in same)
        return list(outbox.net_labels([effect, *(e.effect for e in same)]))


def _next(entries: list[OutboxEntry], now: datetime) -> tuple[int, bool] | None:
    """The entry to take now and whether it is only to be dropped: a deferred one a
    later effect rewrites (first, so the rewrite is still there to see), else the
    first that is due. None: nothing but deferred effects is left."""
    effects = [e.effect for e in entries]
    for i, effect in enumerate(effects):
        if not outbox.due(effect, now) and outbox.superseded(effect, effects[i + 1 :], now):
            return i, True
    for i, entry in enumerate(entries):
        if outbox.due(entry.effect, now):
            return i, False
    return None
