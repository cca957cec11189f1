"""The arq Worker of one pool's sessions queue, as Ballet needs it.

arq polls one sorted set per Worker and bounds only that Worker's jobs. A
Ballet worker may serve several pools (`--pool gpu --pool default`), one arq
Worker each, yet has `BALLET_SESSION_SLOTS` slots in all: `SharedSlots` is
that bound, taken as a job starts and given back as it ends. And a session may
be reserved for a moment for the worker that ran its ticket's last session
(`pools.reserve`): every other worker leaves it in the queue until the
reservation runs out, then any may take it.

Why a reservation and not a queue per worker with a mover: arq's in-progress
key and job key do not name a queue, but its Worker removes a finished or
retried job only from the queue it polls, so a job moved between queues while
a worker starts it could be left behind in one of them and later "expire";
and a Worker per worker queue would need the slots shared all the same. A
reservation keeps every session in its pool's one queue, so status, abort and
the reconciler look in one place, and needs nothing to move it: it runs out.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ballet.jobs.pools import PREFER_PREFIX
from ballet.jobs.wakeups import WakingWorker


class SharedSlots:
    """Session slots shared by the pool Workers of one process."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.busy = 0
        # The pool Workers' wake events: a full process stopped reading its
        # queues, and nobody publishes when one of its own slots frees.
        self.wakes: list[asyncio.Event] = []

    def take(self) -> bool:
        if self.busy >= self.total:
            return False
        self.busy += 1
        return True

    def give(self) -> None:
        """A job ended: its slot is free for any pool's next session."""
        self.put_back()
        for wake in self.wakes:
            wake.set()

    def put_back(self) -> None:
        """A slot taken for a job that did not start: nothing was freed, so no wake
        (one would make every look at a job running elsewhere look again at once)."""
        self.busy -= 1


class PoolWorker(WakingWorker):
    def __init__(self, *, slots: SharedSlots, worker_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._slots = slots
        slots.wakes.append(self.wake)
        self._worker_id = worker_id
        self.running = 0  # sessions of this pool running here now

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        for job_id in await self._not_reserved_elsewhere(self.not_running_here(job_ids)):
            if not self._slots.take():
                return  # the process's slots are full: the next poll looks again
            name = job_id.decode()
            before = self.tasks.get(name)
            await super().start_jobs([job_id])
            if self.tasks.get(name) in (None, before):
                self._slots.put_back()  # another worker had it, or it is not due yet

    async def run_job(self, job_id: str, score: int) -> None:
        self.running += 1
        try:
            await super().run_job(job_id, score)
        finally:
            self.running -= 1
            self._slots.give()

    async def _not_reserved_elsewhere(self, job_ids: list[bytes]) -> list[bytes]:
        if not job_ids:
            return []
        held = await self.pool.mget([PREFER_PREFIX + j.decode() for j in job_ids])
        mine = self._worker_id.encode()
        return [j for j, by in zip(job_ids, held, strict=True) if by is None or by == mine]
