"""A branch moved: the pull requests of tickets waiting on it as their base.

While a ticket waits for people or a person's merge (core/base_moves.py
`heeds_base`) nobody works on its branch, so its base may move on under it. The
pull request is read once per push to its base: conflicting (`dirty`), the ticket
hears `BaseConflict`, with the files both the push and the pull request changed,
and goes to its integrator; `behind` — which GitHub says only where the base's
rules want branches up to date (a strict required-checks rule) — GitHub merges the
base in (`update-branch`), with no person and no event: the new head arrives as any
push does. Mergeability GitHub has not computed yet (null) is left as it is: the
merge itself still answers a conflict.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

import structlog

from ballet.core.base_moves import HEEDS_BASE, heeds_base
from ballet.core.events import AnyEvent, BaseConflict
from ballet.github.forge import Forge
from ballet.github.intents import BaseMoved
from ballet.tickets.live import LiveTickets
from ballet.tickets.mergeability import computed_pr
from ballet.tickets.store import RecordStore

log = structlog.get_logger("ballet.tickets.base_moves")

Handle = Callable[..., Awaitable[bool]]


async def on_base_moved(
    forge: Forge,
    store: RecordStore,
    live: LiveTickets,
    intent: BaseMoved,
    handle: Handle,
    clock: Callable[[], datetime],
    event_id: str,
) -> None:
    keys = await live.of_repo(intent.repo)
    # Every push (a session's to its own branch too) comes here: the index says what
    # each ticket waits for, so only those a base move concerns are read whole.
    waits = {s.key: s.waiting_kind for s in await store.summaries(keys)}
    for key in keys:
        if key in waits and waits[key] not in HEEDS_BASE:
            continue
        rec = await store.load(key, forge)
        if rec is None or rec.pr_number is None or rec.base != intent.branch:
            continue
        if not heeds_base(rec):
            continue
        pr = await computed_pr(forge, intent.repo, rec.pr_number)
        if pr.state != "open" or pr.base_ref != intent.branch:
            continue
        behind = pr.mergeable_state == "behind"
        if behind and await forge.update_branch(intent.repo, pr.number):
            log.info("brought up to date with its base", ticket=key, base=intent.branch)
            continue
        if pr.mergeable is not False and not behind:
            continue  # clean, or GitHub still computing after reading again (a log says)
        both = set(await forge.list_pr_files(intent.repo, pr.number)) & set(intent.files)
        event: AnyEvent = BaseConflict(
            now=clock(),
            base=intent.branch,
            base_sha=intent.sha,
            head_sha=pr.head_sha,
            files=tuple(sorted(both)),
        )
        log.info("conflicts with its moved base", ticket=key, base=intent.branch)
        await handle(
            key, event, event_id=f"{event_id}:{key}", installation_id=intent.installation_id
        )
