"""`.ballet.yml` changed on the default branch: live tickets hear which roles it has.

A ticket runs on the pipeline pinned at its start, but a role deleted from the
repository's configuration is a person's decision that its sign-off is no longer
needed (core/signoffs.py). Each live ticket of the repository is given the roles the
new file has; the engine drops the required ones no longer among them, and ignores
the event where nothing changes. A file that does not validate tells no ticket
anything: its sign-offs stay until a valid file says otherwise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

import structlog

from ballet.core.events import AnyEvent, RolesInConfig
from ballet.core.pools import PoolAccess
from ballet.github.forge import Forge
from ballet.github.intents import ConfigChanged
from ballet.tickets import repo_config
from ballet.tickets.live import LiveTickets

log = structlog.get_logger("ballet.github")

Handle = Callable[..., Awaitable[bool]]


async def roles_at(
    forge: Forge, repo: str, ref: str, pools: PoolAccess | None
) -> tuple[str, ...] | None:
    """The roles `.ballet.yml` has at `ref` (none without the file); None: not valid."""
    text = await repo_config.read_file(forge, repo, ref)
    if text is None:
        return ()
    config = await repo_config.read_config(forge, repo, ref, text, pools)
    return None if config.config is None else tuple(config.config.roles)


async def tell_live_tickets(
    forge: Forge,
    live: LiveTickets,
    intent: ConfigChanged,
    handle: Handle,
    clock: Callable[[], datetime],
    event_id: str,
    pools: PoolAccess | None,
) -> None:
    """Give each live ticket of the repository the roles the changed file has."""
    keys = await live.of_repo(intent.repo)
    if not keys or not intent.sha:
        log.info("configuration changed", repo=intent.repo, sha=intent.sha, live=len(keys))
        return
    roles = await roles_at(forge, intent.repo, intent.sha, pools)
    if roles is None:
        log.info("configuration changed, not valid: sign-offs kept", repo=intent.repo)
        return
    event: AnyEvent = RolesInConfig(now=clock(), roles=roles, sha=intent.sha)
    for key in keys:
        await handle(
            key, event, event_id=f"{event_id}:{key}", installation_id=intent.installation_id
        )
