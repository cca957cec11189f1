"""When the effect now being carried out was decided, at the latest.

A session's mirror is fetched the moment the session is launched, before its
job starts (jobs/prefetch.py), and the job takes a fetch begun since then as
its own. What must hold is only that the fetch began after the engine decided
to start the session: it then shows GitHub as it was after that decision, as
the session's own fetch would. The decision is earlier than the launch; a
fetch an earlier effect of the same drain made (the ticket's start fetches to
write its branch) may already be one.

Under a ticket's lock (`deciding`) the ticket service notes `time.monotonic()`
when the lock is taken, and after each commit under it, by the record version
the commit saved (`committed`). An outbox entry names that version
("<ticket>@<version>#<index>", tickets/store.py), so while an entry is carried
out (`carrying_out`) its decision is known to have been made by the end of its
own commit, or, for an entry committed before the lock was taken (a crashed
drain's), by the lock's taking. Outside an entry `decided_by()` is None: the
time is not known, and the launch counts from itself.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class _Decisions:
    locked: float  # when the ticket's lock was taken: what was committed before it
    committed: dict[int, float] = field(default_factory=dict)  # version → its commit's end
    current: float | None = None  # the entry being carried out: when it was decided by


_DECISIONS: ContextVar[_Decisions | None] = ContextVar("ballet_decisions", default=None)


def decided_by() -> float | None:
    """A `time.monotonic()` no earlier than the decision of the effect being carried out."""
    decisions = _DECISIONS.get()
    return None if decisions is None else decisions.current


def committed(version: int) -> None:
    """The commit that saved record `version` just ended, under the ticket's lock."""
    decisions = _DECISIONS.get()
    if decisions is not None:
        decisions.committed[version] = time.monotonic()


@contextlib.contextmanager
def deciding() -> Iterator[None]:
    """The ticket's lock is held: its outbox's effects were all committed by now."""
    token = _DECISIONS.set(_Decisions(locked=time.monotonic()))
    try:
        yield
    finally:
        _DECISIONS.reset(token)


@contextlib.contextmanager
def carrying_out(entry_id: str) -> Iterator[None]:
    """Outbox entry `entry_id` is being carried out: `decided_by()` says by when."""
    decisions = _DECISIONS.get()
    if decisions is None:
        yield
        return
    version = _version_of(entry_id)
    decisions.current = decisions.committed.get(version, decisions.locked)
    try:
        yield
    finally:
        decisions.current = None


def _version_of(entry_id: str) -> int:
    """The record version in "<ticket>@<version>#<index>"; -1 (none) if it has none."""
    _, _, rest = entry_id.rpartition("@")
    number = rest.partition("#")[0]
    return int(number) if number.isdigit() else -1
