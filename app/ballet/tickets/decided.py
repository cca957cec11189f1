"""When the effects now being carried out were decided, at the latest.

A session's mirror is fetched the moment the session is launched, before its
job starts (jobs/prefetch.py), and the job takes a fetch begun since then as
its own. What must hold is only that the fetch began after the engine decided
to start the session: it then shows GitHub as it was after that decision, as
the session's own fetch would. The moment it was decided is earlier than the
launch; a fetch an earlier effect of the same drain made (the ticket's start
fetches to write its branch) may already be one.

Under a ticket's lock the ticket service notes `time.monotonic()` when the lock
is taken (every effect already in the outbox was committed before that) and
again after each commit under it (`decided_now`), so an effect carried out
there was decided no later than `decided_by()`. Outside a ticket's lock it is
None: the time is not known, and the launch counts from itself.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

_DECIDED_BY: ContextVar[float | None] = ContextVar("ballet_decided_by", default=None)


def decided_by() -> float | None:
    """A `time.monotonic()` no earlier than the decision of the effect being carried out."""
    return _DECIDED_BY.get()


def decided_now() -> None:
    """A commit under the ticket's lock just ended: what it decided, it decided by now."""
    if _DECIDED_BY.get() is not None:
        _DECIDED_BY.set(time.monotonic())


@contextlib.contextmanager
def deciding() -> Iterator[None]:
    """The ticket's lock is held: its outbox's effects were all committed by now."""
    token = _DECIDED_BY.set(time.monotonic())
    try:
        yield
    finally:
        _DECIDED_BY.reset(token)
