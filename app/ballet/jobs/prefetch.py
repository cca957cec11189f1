"""Refreshing a repository's mirror the moment a session of it is launched.

Between the engine launching a session and a session job picking it up lie a
queue poll and a busy event loop (the launching transition's GitHub writes);
the session job's first and longest step is then fetching the mirror. So the
worker that launches a session starts that fetch at once, in the background,
and notes since when a fetch will do: the engine's decision to start it
(tickets/decided.py; the launch when that is not known). A session job of this
process then takes a fetch begun at or after that moment (and finished moments
ago, see `Workspaces.refresh`) as its own, and so does the prefetch: a ticket's
first session takes the fetch its start made to write the branch, after the
decision, in the same drain. The session still sees GitHub as it was after the
engine decided to start it, and still gets its own fresh clone.

Worker-local and best effort: a session picked up by another worker (or a
failed prefetch) fetches for itself, as without it.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict

import structlog

from ballet.sessions import Workspaces
from ballet.tickets.source import TicketSource

log = structlog.get_logger("ballet.jobs.prefetch")

# Launch times kept for sessions that may run here; older ones are dropped (their
# session ran elsewhere, or so late that a fetch of its launch is stale anyway).
KEEP_LAUNCHES = 1024


async def clone_access(tickets: TicketSource, repo: str) -> tuple[str, str | None]:
    """Where to fetch `repo` from, and the token to fetch with. The token is asked
    first: one that must be minted is minted once, and the URL then finds it held
    (asked together, both would mint it)."""
    token = await tickets.git_token(repo)
    return await tickets.clone_url(repo), token


class MirrorPrefetch:
    def __init__(self, workspaces: Workspaces, tickets: TicketSource) -> None:
        self._workspaces = workspaces
        self._tickets = tickets
        self._launched: OrderedDict[str, float] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def launched(self, job_key: str, repo: str, *, decided: float | None = None) -> None:
        """A session of `repo` was just queued: note since when a fetch will do, and
        start one unless one begun since then is at hand. `decided`: a
        `time.monotonic()` no earlier than the engine's decision to start it
        (tickets/decided.py); None: the launch itself."""
        since = time.monotonic() if decided is None else decided
        self._launched[job_key] = since
        while len(self._launched) > KEEP_LAUNCHES:
            self._launched.popitem(last=False)
        task = asyncio.create_task(self._refresh(repo, since))
        self._tasks.add(task)  # a task nobody holds may be collected mid-fetch
        task.add_done_callback(self._tasks.discard)

    def launched_at(self, job_key: str) -> float | None:
        """When this process launched the session, if it did (taken once)."""
        return self._launched.pop(job_key, None)

    async def _refresh(self, repo: str, since: float) -> None:
        try:
            url, token = await clone_access(self._tickets, repo)
            await self._workspaces.refresh(repo, url, token, since=since)
        except Exception as exc:
            # The session's own refresh fetches, and reports what goes wrong.
            log.info("mirror prefetch failed", repo=repo, error=repr(exc))

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
