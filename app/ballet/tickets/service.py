"""The GitHub edge's orchestration: deliveries in, engine transitions, effects out.

For one event of one ticket:
  lock the ticket → carry out effects a crashed run left behind → load the
  record → `core.machine.advance` → commit record + effects + event id →
  carry out the effects, feeding their results (PR opened, merge result) back
  into the engine → release.

`on_delivery` is the worker's `DeliveryConsumer`; `handle` is also the entry
for events that do not come from webhooks (session results, the reconciler).
Rate limits surface as `RateLimited` from here, for the job to be deferred;
the outbox makes the retried job resume where this one stopped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

import structlog

from ballet import metrics
from ballet.core.companion_events import companion_event, names_pr
from ballet.core.config import Runtime
from ballet.core.effects import AnyEffect, MarkerKey
from ballet.core.events import (
    AnyEvent,
    ChecksCompleted,
    CommandIssued,
    TicketRequested,
)
from ballet.core.machine import IllegalEvent, advance
from ballet.core.pools import PoolAccess
from ballet.core.record import Record, split_key, ticket_key
from ballet.github.forge import (
    AppIdentity,
    ForgeError,
    ForgeUnavailable,
    RateLimited,
)
from ballet.github.intents import (
    BaseMoved,
    ConfigChanged,
    ForTicket,
    Ignored,
    InstallationChanged,
    Intent,
    IssueCommands,
    StartTicket,
    TicketTarget,
    ValidateConfigInPR,
)
from ballet.github.translate import translate
from ballet.tickets import base_moves, config_roles, heard, repo_config
from ballet.tickets.branch_writes import BranchWriter
from ballet.tickets.decided import carrying_out, committed, deciding
from ballet.tickets.drain import Drain, Later
from ballet.tickets.interpret import SessionLauncher
from ballet.tickets.live import LiveTickets
from ballet.tickets.memo import Memo
from ballet.tickets.page_links import PageLinks
from ballet.tickets.start import Refusal, request_ticket
from ballet.tickets.store import RecordStore
from ballet.tickets.ticket_forges import InstallationForges, TicketForges, TicketWork

log = structlog.get_logger("ballet.github")


class DeliveryLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def event(self) -> str: ...
    @property
    def payload(self) -> Mapping[str, Any]: ...
    @property
    def received_at(self) -> datetime: ...


class TicketService:
    def __init__(
        self,
        forges: InstallationForges,  # each ticket's work: its repositories only
        store: RecordStore,
        memo: Memo,
        launcher: SessionLauncher,
        *,
        app: AppIdentity,
        default_runtime: Runtime | None,
        clock: Callable[[], datetime],
        live_tickets: LiveTickets,
        find_installation: Callable[[str], Awaitable[int | None]] | None = None,
        pages: PageLinks | None = None,
        pools: PoolAccess | None = None,  # BALLET_POOLS: which repository may use which pool
        branches: BranchWriter | None = None,  # branch writes by git (tickets/branch_writes.py)
        write_grace: timedelta = timedelta(0),  # BALLET_WRITE_GRACE_SECONDS (core/outbox.py)
        later: Later | None = None,  # drains a ticket again when a deferred write is due
        trusted_bots: frozenset[str] = frozenset(),  # BALLET_TRUSTED_BOTS: read as people
    ) -> None:
        self._translate = partial(translate, app=app, trusted_bots=trusted_bots)
        self._pools = pools
        self._branches = branches
        self._write_grace = write_grace
        self._outbox = Drain(store, clock, later)
        self._work = TicketForges(
            forges,
            memo,
            launcher,
            clock=clock,
            own_app_id=app.app_id,
            own_login=app.bot_login,
            pages=pages,
            branches=branches,
        )
        self._find_installation = find_installation
        self._store = store
        self._live = live_tickets
        self._memo = memo
        self._default_runtime = default_runtime
        self._clock = clock

    async def _ticket_work(self, key: str, installation_id: int) -> TicketWork:
        """The ticket's work, its token reaching its repository and pinned companions
        (a record Redis lost is rebuilt by the event's load; its work then rescoped)."""
        record = await self._store.cached(key)
        return self._work.for_ticket(installation_id, key, record)

    # -- deliveries ---------------------------------------------------------------

    async def on_delivery(self, delivery: DeliveryLike) -> None:
        intents = self._translate(delivery.event, delivery.payload, now=delivery.received_at)
        for index, intent in enumerate(intents):
            await self.dispatch(intent, event_id=f"delivery:{delivery.id}:{index}")

    async def dispatch(self, intent: Intent, *, event_id: str) -> None:
        match intent:
            case Ignored(reason=reason):
                log.info("delivery ignored", reason=reason)
            case StartTicket():
                await self._start(intent, event_id)
            case IssueCommands():
                await self._commands(intent)
            case ForTicket():
                await self._for_ticket(intent, event_id)
            case ValidateConfigInPR():
                await self._check_config(intent)
            case ConfigChanged():  # new tickets read it afresh; live ones hear its roles
                forge = self._work.forge(intent.installation_id, (intent.repo,))
                await config_roles.tell_live_tickets(
                    forge, self._live, intent, self.handle, self._clock, event_id, self._pools
                )
            case BaseMoved():  # tickets waiting on that base: up to date, or a conflict
                move = (self._store, self._live, intent, self.handle, self._clock, event_id)
                forge = self._work.forge(intent.installation_id, (intent.repo,))
                await base_moves.on_base_moved(forge, *move)
            case InstallationChanged():
                await self._installation(intent)

    async def _ticket_for(self, target: TicketTarget, installation_id: int) -> str | None:
        """The ticket a delivery is about. A pull request found only through the
        issue its body closes must be the ticket's own: someone else's PR that
        fixes a ticket's issue is not Ballet's to drive."""
        key = await self._store.find_ticket(target)
        if key is None or target.pr is None:
            return key
        forge = self._work.forge(installation_id, (split_key(key)[0],))
        record = await self._store.load(key, forge, pr_hint=target.pr)
        return key if record is not None and names_pr(record, target.repo, target.pr) else None

    async def _for_ticket(self, intent: ForTicket, event_id: str) -> None:
        key = await self._ticket_for(intent.target, intent.installation_id)
        if key is None:
            log.info("event for no ticket", target=intent.target, kind=intent.event.kind)
            return
        work = await self._ticket_work(key, intent.installation_id)
        where = intent.target.repo
        event = await heard.with_permission(work.forge, self._store, key, intent.event, where=where)
        if event is not None and split_key(key)[0] != intent.target.repo:
            event = companion_event(event, intent.target.repo)
        if event is None:
            return
        await self.handle(
            key,
            event,
            event_id=event_id,
            installation_id=intent.installation_id,
            pr_hint=intent.target.pr,
        )
        if isinstance(event, ChecksCompleted) and event.repo is None:
            await self._resume_merge(key, intent.installation_id, event_id)

    async def _resume_merge(self, key: str, installation_id: int, event_id: str) -> None:
        """Checks finished: a waiting merge goes ahead, locked (its update's push comes after)."""
        own = self._work.forge(installation_id, (split_key(key)[0],))
        async with self._store.locked(key):
            record = await self._store.load(key, own)
            if record is None or record.pr_number is None:
                return
            work = self._work.for_ticket(installation_id, key, record)
            result = await work.interpreter.resume_merge(record.ticket.repo, record.pr_number)
            with deciding():
                if result is not None and await self._apply(
                    key, result, f"{event_id}:merge", work, None
                ):
                    await self._drain(key, work)

    # -- one event of one ticket -----------------------------------------------------

    async def handle(
        self,
        key: str,
        event: AnyEvent,
        *,
        event_id: str | None = None,
        installation_id: int | None = None,
        pr_hint: int | None = None,
    ) -> bool:
        """Apply `event` to ticket `key` and carry out the effects; False when it did not apply."""
        repo, _ = split_key(key)
        installation = installation_id or await self._installation_of(repo)
        if installation is None:
            raise ForgeError(f"no App installation is known for {repo}; is Ballet installed there?")
        async with self._store.locked(key):
            with deciding():
                ctx = await self._ticket_work(key, installation)
                await self._drain(key, ctx)
                new = await self._apply(key, event, event_id, ctx, pr_hint)
                if new is not None:  # just started or rebuilt: its companions are known now
                    ctx = self._work.for_ticket(installation, key, new)
                await self._drain(key, ctx)
        return new is not None

    async def _installation_of(self, repo: str) -> int | None:
        """Which installation serves `repo`: remembered in Redis, else asked of GitHub
        (Redis was lost, or the repository came before its installation event)."""
        known = await self._store.installation_of(repo)
        if known is not None or self._find_installation is None:
            return known
        found = await self._find_installation(repo)
        if found is not None:
            await self._store.remember_installation(repo, found)
        return found

    async def _apply(
        self, key: str, event: AnyEvent, event_id: str | None, ctx: TicketWork, pr_hint: int | None
    ) -> Record | None:
        """The ticket's new record, None when the event did not apply."""
        if event_id is not None and await self._store.was_applied(key, event_id):
            log.info("event already applied", ticket=key, event_id=event_id)
            return None
        record = await self._store.load(key, ctx.forge, pr_hint=pr_hint)
        if record is None and not isinstance(event, TicketRequested):
            metrics.TICKET_EVENTS.labels(event.kind, "refused").inc()
            log.info("no such ticket", ticket=key, kind=event.kind)
            return None
        try:
            new, effects = advance(record, event, write_grace=self._write_grace)
        except IllegalEvent as exc:
            metrics.TICKET_EVENTS.labels(event.kind, "refused").inc()
            log.info("event does not apply", ticket=key, kind=event.kind, reason=str(exc))
            return None
        await self._store.commit(new, effects, event_id, before=record, tally=True)
        committed(new.version)  # a session it starts may take a mirror fetched from now on
        # Every live ticket gets the reconciler's ticks, sessions or not (a human
        # or platform wait times out too); an ended one stops getting them.
        await self._live.track(new)
        metrics.ticket_advanced(event.kind, record.status if record else None, new.status)
        metrics.flow_observed(record, new)
        log.info("ticket advanced", ticket=key, kind=event.kind, status=new.status, stage=new.stage)
        return new

    async def _drain(self, key: str, ctx: TicketWork) -> None:
        async def carry_out(entry_id: str, effect: AnyEffect) -> None:
            await self._carry_out(key, entry_id, effect, ctx)

        await self._outbox.run(key, carry_out)

    async def drain(self, key: str) -> None:
        """Carry out ticket `key`'s effects that are due (the deferred drain job)."""
        repo, _ = split_key(key)
        installation = await self._installation_of(repo)
        if installation is None:
            return  # no installation serves it any longer: nothing can be written
        async with self._store.locked(key):
            with deciding():
                await self._drain(key, await self._ticket_work(key, installation))

    async def _carry_out(self, key: str, entry_id: str, effect: AnyEffect, ctx: TicketWork) -> None:
        try:
            with carrying_out(entry_id):
                follow_up = await ctx.interpreter.apply(effect)
        except (RateLimited, ForgeUnavailable):
            raise  # the job is retried later and resumes at this effect
        except ForgeError as exc:
            # GitHub refused this effect for good (422, 403, a missing base
            # branch...): retrying would wedge the ticket behind it forever.
            await self._effect_failed(key, effect, exc, ctx)
            follow_up = None
        if follow_up is not None:
            await self._apply(key, follow_up, f"{entry_id}:result", ctx, None)

    async def _effect_failed(
        self, key: str, effect: AnyEffect, exc: ForgeError, ctx: TicketWork
    ) -> None:
        log.error("effect failed for good", ticket=key, effect=effect.kind, error=str(exc))
        _, issue = split_key(key)
        body = (
            f"⚠️ Ballet could not carry out `{effect.kind}` on GitHub: {exc}\n\n"
            "Fix the cause (permissions of the App, a protected or missing branch), "
            "then `/ballet retry`."
        )
        with contextlib.suppress(ForgeError):
            await self._notice(ctx, key, issue, f"failed-{effect.kind}", body)

    # -- starting a ticket -------------------------------------------------------------

    async def _start(self, intent: StartTicket, event_id: str) -> None:
        ctx = self._work.for_repos(intent.installation_id, (intent.repo,))
        await self._store.remember_installation(intent.repo, intent.installation_id)
        result = await request_ticket(ctx.forge, intent, self._default_runtime, self._pools)
        key = ticket_key(intent.repo, intent.issue)
        if result is None:
            log.info("label is not the trigger label", repo=intent.repo, label=intent.label)
        elif isinstance(result, Refusal):
            await self._notice(ctx, key, intent.issue, result.what, result.body)
        else:
            await self.handle(
                key, result, event_id=event_id, installation_id=intent.installation_id
            )

    async def _notice(self, ctx: TicketWork, key: str, issue: int, what: str, body: str) -> None:
        marker = MarkerKey(ticket=key, kind="notice", extra=what).render()
        await ctx.interpreter.upsert_comment(split_key(key)[0], issue, marker, body)

    # -- commands, config checks, installations -------------------------------------------

    async def _commands(self, intent: IssueCommands) -> None:
        key = await self._ticket_for(intent.target, intent.installation_id)
        if key is None:
            log.info("commands on a pull request of no ticket", target=intent.target)
            return
        ctx = await self._ticket_work(key, intent.installation_id)
        if await self._store.load(key, ctx.forge, pr_hint=intent.target.pr) is None:
            _, number = split_key(key)
            label = repo_config.DEFAULT_TRIGGER_LABEL
            here = self._work.for_repos(intent.installation_id, (intent.target.repo,))
            await here.interpreter.upsert_comment(
                intent.target.repo,
                intent.target.issue or intent.target.pr or number,
                MarkerKey(ticket=key, kind="reply", extra=str(intent.comment_id)).render(),
                f"@{intent.author} this is not a Ballet ticket, so there is nothing for "
                f"`/ballet` to act on. Add the trigger label (`{label}` unless .ballet.yml "
                "names another) to the issue to start one.",
            )
            return
        permission = await ctx.forge.permission(intent.target.repo, intent.author)
        for index, command in enumerate(intent.commands):
            text = await heard.text_to_refresh(ctx.forge, key, command)
            event = CommandIssued(
                now=intent.now,
                command=command,
                author=intent.author,
                permission=permission,
                author_is_bot=intent.author_is_bot,
                comment_id=intent.comment_id,
                issue_text=text,
            )
            await self.handle(
                key,
                event,
                event_id=f"comment:{intent.comment_id}:{index}",
                installation_id=intent.installation_id,
                pr_hint=intent.target.pr,
            )

    async def _check_config(self, intent: ValidateConfigInPR) -> None:
        forge = self._work.forge(intent.installation_id, (intent.repo,))
        await repo_config.check_config_in_pr(
            forge, self._memo, intent.repo, intent.pr, intent.head_sha, self._pools
        )

    async def _installation(self, intent: InstallationChanged) -> None:
        gone = intent.action in ("deleted", "suspend")
        for repo in intent.added:
            if gone:
                await self._store.forget_repositories((repo,))
            else:
                await self._store.remember_installation(repo, intent.installation_id)
        await self._store.forget_repositories(intent.removed)
        log.info(
            "installation changed",
            installation_id=intent.installation_id,
            action=intent.action,
            added=intent.added,
            removed=intent.removed,
        )
