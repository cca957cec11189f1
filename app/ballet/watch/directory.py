"""Where the App is installed, as the pages ask it: cheap for what does not exist.

Anyone may ask for `/tickets/<any owner>/<any name>/1`; asking GitHub
`/repos/{o}/{r}/installation` for each such name spent a request with the App's
credentials per made-up name. The pages ask instead, in this order:

1. what the worker knows (`RecordStore.installation_of`: installation events
   and tickets write it), so a repository installed a moment ago is seen at once;
2. the App's installations by account (`/app/installations`, kept 5 minutes):
   an owner the App is not installed for is answered with no request;
3. that installation's repositories (`/installation/repositories`, kept a
   minute as a Redis set): a name it does not list is answered with no request.

So made-up names cost a few listings a minute, however many. An installation
of more than `MOST_LISTED` repositories (or an App of more installations than
a listing reads) is asked per repository as before, its "not installed"
answers kept 5 minutes. Every look-up is shared by concurrent askers
(`single_flight.py`) and, through Redis, by every web process.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping
from typing import TypeVar, cast

from redis.asyncio import Redis

from ballet.github.app import GitHubApp
from ballet.github.errors import NotFound
from ballet.github.forge import Forge
from ballet.github.token_scope import Access, TokenScope
from ballet.tickets.store import RecordStore
from ballet.watch.single_flight import SingleFlight

PREFIX = "ballet:watch:directory"
ACCOUNTS_SECONDS = 300  # a new owner's installation event is seen at once (step 1)
REPOSITORIES_SECONDS = 60  # as long as an access answer is kept (access.py)
NEGATIVE_SECONDS = 300
MOST_LISTED = 1000
HERE = ""  # a field or member every kept listing holds: an empty one is still kept
PARTIAL = "*"  # the listing was cut: it cannot say "not installed" (no login or name has it)
UNLISTED = -1  # an owner the listings cannot answer for: ask per repository
# What a page asks of a repository: who may read it (a collaborator's permission).
SHOWN: Mapping[str, Access] = {"metadata": "read"}
T = TypeVar("T")


class Directory:
    def __init__(
        self,
        redis: Redis,
        store: RecordStore,
        github: GitHubApp,
        *,
        most_listed: int = MOST_LISTED,
    ) -> None:
        self._redis = redis
        self._store = store
        self._github = github
        self._most = most_listed
        self._accounts: SingleFlight[dict[str, int] | None] = SingleFlight()
        self._repositories: SingleFlight[set[str] | None] = SingleFlight()
        self._asked: SingleFlight[int | None] = SingleFlight()

    async def known(self, repo: str) -> int | None:
        """The installation the worker knows serves `repo`; never asks GitHub."""
        return await self._store.installation_of(repo)

    async def of(self, repo: str) -> int | None:
        """The App's installation on `repo`, or None where it is not installed."""
        known = await self.known(repo)
        if known is not None:
            return known
        installation = await self._installation_of_owner(repo.split("/", 1)[0].lower())
        if installation is None:
            return None
        if installation != UNLISTED:
            listed = await self._lists(installation, repo.lower())
            if listed is not None:
                return installation if listed else None
        return await self._ask(repo)

    def forge(self, installation_id: int, repo: str) -> Forge:
        """The installation's forge on `repo` alone, able to read who may read it (a
        collaborator's permission: metadata) and nothing else: a page holds no token that
        could read the code, write, or reach another repository."""
        return self._github.for_installation(installation_id, TokenScope.of((repo,), SHOWN))

    async def _installation_of_owner(self, owner: str) -> int | None:
        key = f"{PREFIX}:accounts"
        here, partial, found = await _awaited(self._redis.hmget(key, [HERE, PARTIAL, owner]))
        if here is None:
            accounts = await self._accounts.run(key, lambda: self._list_accounts(key))
            return UNLISTED if accounts is None else accounts.get(owner)
        if found is not None:
            return int(found)
        return UNLISTED if partial is not None else None

    async def _list_accounts(self, key: str) -> dict[str, int] | None:
        accounts = await self._github.installations_by_account()
        fields = {HERE: "1", **({PARTIAL: "1"} if accounts is None else {})}
        fields |= {login: str(i) for login, i in (accounts or {}).items()}
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            pipe.hset(key, mapping=fields)
            pipe.expire(key, ACCOUNTS_SECONDS)
            await pipe.execute()
        return accounts

    async def _lists(self, installation: int, repo: str) -> bool | None:
        """Whether the installation lists `repo` (lower-cased); None: too many to list."""
        key = f"{PREFIX}:repositories:{installation}"
        here, partial, member = await _awaited(self._redis.smismember(key, [HERE, PARTIAL, repo]))
        if not here:
            names = await self._repositories.run(key, lambda: self._list(installation, key))
            return None if names is None else repo in names
        return None if partial else bool(member)

    async def _list(self, installation: int, key: str) -> set[str] | None:
        try:
            names = await self._github.installation_repositories(installation, self._most)
        except NotFound:
            names = set()  # the installation is gone: it reaches nothing
        async with self._redis.pipeline(transaction=True) as pipe:
            members = [HERE, PARTIAL] if names is None else [HERE, *names]
            pipe.delete(key)
            pipe.sadd(key, *members)
            pipe.expire(key, REPOSITORIES_SECONDS)
            await pipe.execute()
        return names

    async def _ask(self, repo: str) -> int | None:
        """GitHub's `/repos/{repo}/installation`, a "no" kept five minutes."""
        key = f"{PREFIX}:not-installed:{repo.lower()}"
        if await self._redis.exists(key):
            return None
        return await self._asked.run(key, lambda: self._ask_github(repo, key))

    async def _ask_github(self, repo: str, key: str) -> int | None:
        found = await self._github.installation_of(repo)
        if found is None:
            await self._redis.set(key, "1", ex=NEGATIVE_SECONDS)
        else:
            await self._store.remember_installation(repo, found)
        return found


async def _awaited(value: Awaitable[T] | T) -> T:
    # redis-py types its hash and set commands for sync and async clients at once;
    # on the asyncio client they are always awaitable.
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value
