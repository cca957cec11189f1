"""A branch moved: the pull requests of tickets waiting on it as their base.

While a ticket waits for people or a person's merge (core/base_moves.py
`heeds_base`) nobody works on its branch, so its base may move on under it. The
pull request is read once per push to its base: conflicting (`dirty`), the ticket
hears `BaseConflict`, with the files both the push and the pull request changed,
and goes to its integrator; behind where the base's rules want branches up to date (a
strict required-checks rule; GitHub says `behind`, or `blocked` while a review or a
check is missing too: tickets/mergeability.py `behind_base`) — GitHub merges the
base in (`update-branch`), with no person and no event: the new head arrives as any
push does. Behind while GitHub's auto-merge waits, pinned to the approved head, the
ticket hears `BaseBehind` instead: the engine has it brought up to date pinned to that
head and moves the pin to the update (core/merge_pins.py), as an unpinned update's push
would withdraw the merge and ask a person again. Mergeability GitHub has not computed
yet (null) is left as it is: the merge itself still answers a conflict.

A push to a companion's branch is read the same way for the live tickets of other
repositories whose pull request there waits on it (`.ballet.yml` `companions:`):
behind, GitHub brings it up to date (the new head reaches the ticket as a companion's
push: core/companion_heads.py); conflicting, the ticket hears `BaseConflict` naming
the companion's repository, and its integrator brings that branch up to date too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

import structlog

from ballet.core.base_moves import HEEDS_BASE, heeds_base
from ballet.core.events import BaseBehind, BaseConflict
from ballet.core.merge_pins import AUTO_MERGE_WAIT, pinned_to
from ballet.github.forge import Forge
from ballet.github.intents import BaseMoved
from ballet.tickets.live import LiveTickets
from ballet.tickets.mergeability import behind_base, computed_pr
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
    """The tickets of the pushed repository waiting on the branch, then those of other
    repositories whose pull request in a companion waits on it."""
    members = await live.members()  # read once: its own tickets, then the others
    own = [key for key in members if key.startswith(f"{intent.repo}#")]
    for key in await _may_heed(store, own):
        rec = await store.load(key, forge)
        if rec is None or rec.pr_number is None or rec.base != intent.branch:
            continue
        if not heeds_base(rec):
            continue
        auto_merging = rec.waiting is not None and rec.waiting.kind == AUTO_MERGE_WAIT
        pin = pinned_to(rec) if auto_merging else None
        event = await _look(forge, intent, rec.pr_number, clock, pin)
        if event is not None:
            log.info("behind or in conflict with its moved base", ticket=key, kind=event.kind)
            await handle(
                key, event, event_id=f"{event_id}:{key}", installation_id=intent.installation_id
            )
    others = [key for key in members if not key.startswith(f"{intent.repo}#")]
    await _companions_moved(forge, store, others, intent, handle, clock, event_id)


async def _companions_moved(
    forge: Forge,
    store: RecordStore,
    keys: list[str],
    intent: BaseMoved,
    handle: Handle,
    clock: Callable[[], datetime],
    event_id: str,
) -> None:
    """A companion's base moved: the ticket's pull request there is brought up to date,
    or the ticket hears the conflict, as for its own (core/base_moves.py)."""
    for key in await _may_heed(store, keys):
        # Only a record Redis holds: a live set that outlived its records is rebuilt by
        # the reconciler, and the pushed repository's token could not read another's.
        rec = await store.cached(key)
        if rec is None or not heeds_base(rec):
            continue
        for pr in rec.companion_prs:
            if pr.repo != intent.repo or pr.number is None or pr.state != "open":
                continue
            event = await _look(forge, intent, pr.number, clock)
            if not isinstance(event, BaseConflict):
                continue
            log.info("a companion conflicts with its moved base", ticket=key, repo=intent.repo)
            theirs = event.model_copy(update={"repo": intent.repo})
            where = f"{event_id}:{key}"
            await handle(key, theirs, event_id=where, installation_id=intent.installation_id)


async def _may_heed(store: RecordStore, keys: list[str]) -> list[str]:
    """The tickets a base move may concern. Every push (a session's to its own branch too)
    comes here: the index says what each waits for, so only these are read whole (and
    those the index lacks)."""
    waits = {s.key: s.waiting_kind for s in await store.summaries(keys)}
    return [key for key in keys if key not in waits or waits[key] in HEEDS_BASE]


async def _look(
    forge: Forge,
    intent: BaseMoved,
    number: int,
    clock: Callable[[], datetime],
    pin: str | None = None,
) -> BaseConflict | BaseBehind | None:
    """Pull request `number` of the pushed repository, based on the moved branch: brought
    up to date where GitHub says it is behind (None; `BaseBehind` when its merge is
    pinned to `pin`, for the engine to update it pinned), or its conflict with the base."""
    pr = await computed_pr(forge, intent.repo, number)
    if pr.state != "open" or pr.base_ref != intent.branch:
        return None
    behind = await behind_base(forge, intent.repo, pr)
    if behind and pin is not None:
        return BaseBehind(
            now=clock(), base=intent.branch, base_sha=intent.sha, head_sha=pr.head_sha
        )
    if behind and await forge.update_branch(intent.repo, pr.number):
        log.info("brought up to date with its base", repo=intent.repo, pr=number)
        return None
    if pr.mergeable is not False and not behind:
        return None  # clean, or GitHub still computing after reading again (a log says)
    both = set(await forge.list_pr_files(intent.repo, pr.number)) & set(intent.files)
    return BaseConflict(
        now=clock(),
        base=intent.branch,
        base_sha=intent.sha,
        head_sha=pr.head_sha,
        files=tuple(sorted(both)),
    )
