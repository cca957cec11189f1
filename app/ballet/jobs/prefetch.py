"""What a session will need from GitHub, begun the moment it is launched.

Between the engine launching a session and a session job picking it up lie a
queue poll and a busy event loop (the launching transition's GitHub writes);
the session job then fetches the mirror and reads the issue, each a round trip
to GitHub, before its process can start. So the worker that launches a session
begins both at once, in the background:

- the mirror's fetch, noting since when a fetch will do: the engine's decision
  to start the session (tickets/decided.py; the launch when that is not known).
  A session job of this process takes a fetch begun at or after that moment
  (and finished moments ago, see `Workspaces.refresh`) as its own, and so does
  the prefetch: a ticket's first session takes the fetch its start made to
  write the branch, after the decision, in the same drain.
- the issue's read (its labels and URL, for the runner's spec; the title and
  body a session works from are the ticket's pinned text), which
  the session job takes if it starts less than `ISSUE_FRESH_SECONDS` after the
  read began; a session queued behind busy slots reads the issue as it is
  when it runs, and so does one whose early read failed.

Either way the session sees GitHub as it was after the engine decided to start
it, and still gets its own fresh clone. Worker-local and best effort: a session
picked up by another worker (or a failed prefetch) fetches and reads for
itself, as without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from ballet.github.forge import IssueDetails
from ballet.sessions import Workspaces
from ballet.tickets.source import TicketSource

log = structlog.get_logger("ballet.jobs.prefetch")

# Launch times kept for sessions that may run here; older ones are dropped (their
# session ran elsewhere, or so late that a fetch of its launch is stale anyway).
KEEP_LAUNCHES = 1024
# How long an issue read begun at the launch stands for the issue as it is: the
# usual pick-up is tens of milliseconds; a session that waited longer for a slot
# reads it again, as a person may have relabelled the issue meanwhile.
ISSUE_FRESH_SECONDS = 5.0


async def clone_access(tickets: TicketSource, repo: str) -> tuple[str, str | None]:
    """Where to fetch `repo` from, and the token to fetch with. The token is asked
    first: one that must be minted is minted once, and the URL then finds it held
    (asked together, both would mint it)."""
    token = await tickets.git_token(repo)
    return await tickets.clone_url(repo), token


@dataclass(frozen=True)
class _IssueRead:
    began: float
    read: asyncio.Task[IssueDetails]


class SessionPrefetch:
    def __init__(
        self,
        workspaces: Workspaces,
        tickets: TicketSource,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._workspaces = workspaces
        self._tickets = tickets
        self._clock = clock
        self._launched: OrderedDict[str, float] = OrderedDict()
        self._issues: dict[str, _IssueRead] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def launched(
        self, job_key: str, repo: str, *, issue: int | None = None, decided: float | None = None
    ) -> None:
        """A session of `repo` (on `issue`) was just queued: note since when a fetch
        will do, and start one unless one begun since then is at hand; begin reading
        the issue. `decided`: a `time.monotonic()` no earlier than the engine's
        decision to start it (tickets/decided.py); None: the launch itself."""
        since = time.monotonic() if decided is None else decided
        self._launched[job_key] = since
        while len(self._launched) > KEEP_LAUNCHES:
            self._launched.popitem(last=False)
        task = asyncio.create_task(self._refresh(repo, since))
        self._tasks.add(task)  # a task nobody holds may be collected mid-fetch
        task.add_done_callback(self._tasks.discard)
        self._forget_stale_reads()
        if issue is not None:
            read = asyncio.create_task(self._tickets.issue(repo, issue))
            # Untaken (the session ran elsewhere or late), its failure is nobody's error.
            read.add_done_callback(_retrieved)
            self._issues[job_key] = _IssueRead(self._clock(), read)

    def launched_at(self, job_key: str) -> float | None:
        """When this process launched the session, if it did (taken once)."""
        return self._launched.pop(job_key, None)

    def issue_read(self, job_key: str) -> asyncio.Task[IssueDetails] | None:
        """The issue's read begun at the session's launch, when this process launched
        it less than ISSUE_FRESH_SECONDS ago and the read has not failed (taken once)."""
        begun = self._issues.pop(job_key, None)
        if begun is None:
            return None
        if self._clock() - begun.began >= ISSUE_FRESH_SECONDS or _failed(begun.read):
            begun.read.cancel()
            return None
        return begun.read

    def _forget_stale_reads(self) -> None:
        now = self._clock()
        for job_key, begun in list(self._issues.items()):
            if now - begun.began >= ISSUE_FRESH_SECONDS:
                begun.read.cancel()
                del self._issues[job_key]

    async def _refresh(self, repo: str, since: float) -> None:
        try:
            url, token = await clone_access(self._tickets, repo)
            await self._workspaces.refresh(repo, url, token, since=since)
        except Exception as exc:
            # The session's own refresh fetches, and reports what goes wrong.
            log.info("mirror prefetch failed", repo=repo, error=repr(exc))

    async def aclose(self) -> None:
        reads = [begun.read for begun in self._issues.values()]
        self._issues.clear()
        for task in (*reads, *self._tasks):
            task.cancel()
        await asyncio.gather(*reads, *self._tasks, return_exceptions=True)


def _failed(read: asyncio.Task[IssueDetails]) -> bool:
    return read.done() and (read.cancelled() or read.exception() is not None)


def _retrieved(read: asyncio.Task[IssueDetails]) -> None:
    with contextlib.suppress(asyncio.CancelledError):
        read.exception()
