"""Who is signed in, as the server holds it: a session lives in Redis, not only in a cookie.

The signed cookie says who a browser signed in as; it cannot be taken back, so
a copy of it would read private tickets and press buttons for its whole 8
hours after its owner signed out. Each sign-in therefore also keeps its session
id in Redis for the cookie's lifetime, signing out deletes it, and a cookie
counts only while its id is there. Every web process asks the one Redis on
every request (one EXISTS), with no cache of its own: a sign-out on one process
holds on all of them at once. A Redis that lost its data has signed everyone
out, never anyone back in.
"""

from __future__ import annotations

from redis.asyncio import Redis

from ballet.watch.cookies import SESSION_SECONDS, Viewer

PREFIX = "ballet:watch:signed-in"


class SignedIn:
    def __init__(self, redis: Redis, *, seconds: int = SESSION_SECONDS) -> None:
        self._redis = redis
        self._seconds = seconds

    async def begin(self, viewer: Viewer) -> None:
        await self._redis.set(_key(viewer), viewer.login, ex=self._seconds)

    async def holds(self, viewer: Viewer) -> bool:
        return bool(await self._redis.exists(_key(viewer)))

    async def end(self, viewer: Viewer) -> None:
        await self._redis.delete(_key(viewer))


def _key(viewer: Viewer) -> str:
    return f"{PREFIX}:{viewer.session}"
