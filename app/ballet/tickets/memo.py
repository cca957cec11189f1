"""Ids of what Ballet created on GitHub, remembered in Redis to save API calls.

A marker's comment id spares listing an issue's comments before every edit;
a check run's id lets the next status update it instead of adding another;
a merge waiting for checks is kept until they finish.
Ids are only a shortcut: a missing one is found again on GitHub (comments by
their hidden marker), and a stale one is detected by the edit failing with
404, so losing Redis never duplicates a comment. A waiting merge lost with
Redis leaves the ticket waiting for its merge result until the reconciler's
timeout raises it.
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
        await self._set(f"comment:{repo}#{number}:{marker}", comment_id)

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
        await self._set(f"check:{repo}:{name}:{head_sha}", run_id)
