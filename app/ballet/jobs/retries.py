"""When a job tries again: contention is waited out, failures are counted.

Waiting is not failing. A job that meets GitHub's rate limit, a backlog of
its installation's paced writes or a ticket busy with another event is
deferred as often as it takes (`contention`), because a burst of tickets in
one installation must slow Ballet down, never lose a delivery or an event.
So arq's own try count, which counts deferrals too, is set far out of reach
(`MAX_DEFERRALS`), and a job's real failures (GitHub down, a bug) are
counted here, in Redis, against a small budget of their own.
"""

from __future__ import annotations

from typing import Any

from arq import Retry
from redis.asyncio import Redis

from ballet.github.forge import RateLimited
from ballet.tickets.lock import TicketBusy

# arq's max_tries for jobs that defer on contention: only contention gets near it.
MAX_DEFERRALS = 10_000
FAILURES_PREFIX = "ballet:job-failures:"
FAILURES_KEEP_SECONDS = 7 * 24 * 3600
# The job already waited for the ticket's lock (60 s); it joins the line again soon.
BUSY_DEFER_SECONDS = 1.0


def contention(exc: BaseException) -> Retry | None:
    """The deferral for a job that has to wait its turn, or None when `exc` is no such wait."""
    if isinstance(exc, RateLimited):
        return Retry(defer=exc.retry_after_seconds)
    if isinstance(exc, TicketBusy):
        return Retry(defer=BUSY_DEFER_SECONDS)
    return None


async def count_failure(redis: Redis, ctx: dict[str, Any]) -> int:
    """One more real failure of this job; how many it has had, this one included."""
    key = FAILURES_PREFIX + str(ctx.get("job_id", "?"))
    async with redis.pipeline(transaction=True) as tx:
        tx.incr(key)
        tx.expire(key, FAILURES_KEEP_SECONDS)
        count, _ = await tx.execute()
    return int(count)


async def forget_failures(redis: Redis, ctx: dict[str, Any]) -> None:
    # A failure is counted only as its try ends in a retry, so a job's first try has
    # none to forget: no round trip for the usual job.
    if ctx.get("job_try", 1) > 1:
        await redis.delete(FAILURES_PREFIX + str(ctx.get("job_id", "?")))
