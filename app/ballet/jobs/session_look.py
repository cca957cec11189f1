"""What Redis says of a session's job, read in one transaction, for the crash verdict.

The reconciler once read the heartbeat, the last beat and arq's job status one
round trip after another. A job that started in between (queued for minutes
behind busy slots, picked up just then) was seen silent by the first read and
begun by the second: a session that had beaten once and gone silent, which is
how a crash looks. The ticket then ran the stage again as attempt 2 while
attempt 1 ran. Read together, the beat (one transaction that writes both its
keys) is wholly before the look or wholly after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix, result_key_prefix
from arq.jobs import JobStatus
from arq.utils import timestamp_ms

from ballet.core.pools import DEFAULT_POOL
from ballet.jobs.heartbeats import heartbeat_key, last_beat_key
from ballet.jobs.launcher import LAUNCHED_PREFIX
from ballet.queue import sessions_queue


class Silent(NamedTuple):
    """A session judged crashed: its job key and its last beat, if it ever beat."""

    job_key: str
    last_beat: datetime | None


@dataclass(frozen=True)
class Seen:
    beating: bool
    last_beat: datetime | None
    status: JobStatus  # arq's, as `arq.jobs.Job.status` tells it
    launched: bool  # its launch marker exists (it outlives the job)


def _queue(marker: bytes | None) -> str:
    """The sessions queue a launch marker names (`1`, or none: the default pool's)."""
    pool = DEFAULT_POOL if marker in (None, b"1") else marker.decode()
    return sessions_queue(pool)


async def look(redis: ArqRedis, job_key: str) -> Seen:
    """The session's heartbeat, last beat, arq status and launch, as of one moment."""
    marker: bytes | None = await redis.get(LAUNCHED_PREFIX + job_key)
    while True:
        queue = _queue(marker)
        async with redis.pipeline(transaction=True) as tx:
            tx.exists(heartbeat_key(job_key))
            tx.get(last_beat_key(job_key))
            tx.exists(result_key_prefix + job_key)
            tx.exists(in_progress_key_prefix + job_key)
            tx.zscore(queue, job_key)
            tx.get(LAUNCHED_PREFIX + job_key)
            beating, last, done, running, score, now_marker = await tx.execute()
        if now_marker == marker:
            break
        # Launched (or its marker lost) between the two reads: its queue is known now.
        # A marker is written once, so this looks at most once more.
        marker = now_marker
    if done:
        status = JobStatus.complete
    elif running:
        status = JobStatus.in_progress
    elif score is not None:
        status = JobStatus.deferred if score > timestamp_ms() else JobStatus.queued
    else:
        status = JobStatus.not_found
    return Seen(
        beating=bool(beating),
        last_beat=datetime.fromisoformat(last.decode()) if last else None,
        status=status,
        launched=now_marker is not None,
    )
