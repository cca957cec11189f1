"""Ids of what Ballet created on GitHub, remembered in Redis to save API calls.

A marker's comment id spares listing an issue's comments before every edit;
a check run's id lets the next status update it instead of adding another;
a merge waiting for checks is kept until they finish.
Ids are only a shortcut: a missing one is found again on GitHub (comments by
their hidden marker), and a stale one is detected by the edit failing with
404, so losing Redis never duplicates a comment. A waiting merge lost with
Redis leaves the ticket waiting for its merge result until the reconciler's
timeout raises it.

The ledger lets Ballet create without looking first. It is opened when Ballet
opens a ticket's pull request itself, so nothing of the ticket's exists yet;
from then on every comment on that PR and every check run of the ticket is
marked "creating" before the create and remembered after it. While a ticket
has a ledger, an id that is neither remembered nor being created was never
made, and the interpreter creates it without listing. A crash mid-create
leaves the mark, and a lost Redis loses the ledger: both fall back to looking
on GitHub, so neither duplicates anything.
"""

from __future__ import annotations

from redis.asyncio import Redis

from ballet.core.effects import MergePR

TTL_SECONDS = 90 * 24 * 3600


class Memo:
    def __init__(self, redis: Redis, *, prefix: str = "ballet:memo") -> None:
        self._redis = redis
        self._prefix = prefix

    async def _get(self, key: str) -> int | None:
        raw = await self._redis.get(f"{self._prefix}:{key}")
        return int(raw) if raw is not None else None

    async def _set(self, key: str, value: int) -> None:
        await self._redis.set(f"{self._prefix}:{key}", str(value), ex=TTL_SECONDS)

    # Keyed by the issue or PR too: the tracking comment's marker is the same
    # on the issue and, later, on the pull request.
    async def comment_id(self, repo: str, number: int, marker: str) -> int | None:
        return await self._get(f"comment:{repo}#{number}:{marker}")

    async def remember_comment(self, repo: str, number: int, marker: str, comment_id: int) -> None:
        await self._remember(f"comment:{repo}#{number}:{marker}", comment_id)

    async def forget_comment(self, repo: str, number: int, marker: str) -> None:
        await self._redis.delete(f"{self._prefix}:comment:{repo}#{number}:{marker}")

    # A merge that waits for a head's checks to finish (see interpret.py).
    async def pending_merge(self, repo: str, number: int) -> MergePR | None:
        raw = await self._redis.get(f"{self._prefix}:merge:{repo}#{number}")
        return MergePR.model_validate_json(raw) if raw is not None else None

    async def remember_pending_merge(self, effect: MergePR) -> None:
        await self._redis.set(
            f"{self._prefix}:merge:{effect.repo}#{effect.number}",
            effect.model_dump_json(),
            ex=TTL_SECONDS,
        )

    async def forget_pending_merge(self, repo: str, number: int) -> None:
        await self._redis.delete(f"{self._prefix}:merge:{repo}#{number}")

    async def check_run_id(self, repo: str, name: str, head_sha: str) -> int | None:
        return await self._get(f"check:{repo}:{name}:{head_sha}")

    async def remember_check_run(self, repo: str, name: str, head_sha: str, run_id: int) -> None:
        await self._remember(f"check:{repo}:{name}:{head_sha}", run_id)

    # -- the ledger: create without looking first (see the module's docstring) --------

    async def open_ledger(self, ticket: str, pr_number: int) -> None:
        await self._set(f"ledger:{ticket}", pr_number)

    async def creating_pr(self, ticket: str) -> None:
        await self._set(f"creating:pr:{ticket}", 1)

    async def pr_was_being_created(self, ticket: str) -> bool:
        return await self._get(f"creating:pr:{ticket}") is not None

    async def ledger(self, ticket: str) -> int | None:
        """The PR whose comments (and the ticket's check runs) this memo knows all of."""
        return await self._get(f"ledger:{ticket}")

    async def creating_comment(self, repo: str, number: int, marker: str) -> None:
        await self._set(f"creating:comment:{repo}#{number}:{marker}", 1)

    async def comment_was_being_created(self, repo: str, number: int, marker: str) -> bool:
        return await self._get(f"creating:comment:{repo}#{number}:{marker}") is not None

    async def creating_check_run(self, repo: str, name: str, head_sha: str) -> None:
        await self._set(f"creating:check:{repo}:{name}:{head_sha}", 1)

    async def check_run_was_being_created(self, repo: str, name: str, head_sha: str) -> bool:
        return await self._get(f"creating:check:{repo}:{name}:{head_sha}") is not None

    async def _remember(self, key: str, value: int) -> None:
        """Remember an id and drop its "creating" mark, in one step."""
        async with self._redis.pipeline(transaction=True) as tx:
            tx.set(f"{self._prefix}:{key}", str(value), ex=TTL_SECONDS)
            tx.delete(f"{self._prefix}:creating:{key}")
            await tx.execute()
