"""The composition root: the one place Ballet's parts are built and wired together.

`ballet serve`, `ballet worker`, the demo and the tests all build a worker's
`Services` here (`build_services`); nothing else constructs the GitHub edge,
the ticket service or the session jobs. The pieces it joins:

- the GitHub edge (`build_edge`): the App (`GitHubApp`: a REST forge per installation), the
  record store and the ticket service that consumes deliveries and applies
  ticket events; its launcher sends StartSession effects to the sessions queue;
- the session jobs (`session_jobs_for`): workspaces, the ticket source, the
  artifacts, the session logs (BALLET_LOG_STORE) and the confinement every
  stage session runs under.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import structlog
from arq.connections import ArqRedis
from redis.asyncio import Redis

from ballet.core.config import Runtime
from ballet.core.egress import parse_rule
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.github.forge import AppIdentity
from ballet.jobs.artifacts import Artifacts
from ballet.jobs.deliveries import LoggingConsumer
from ballet.jobs.prefetch import SessionPrefetch
from ballet.jobs.redelivery import Redeliveries
from ballet.jobs.services import (
    DeliveryConsumer,
    Services,
    SessionJobs,
    TicketEventHandler,
)
from ballet.jobs.stage_sessions import ArqSessionLauncher
from ballet.jobs.ticket_events import drain_later
from ballet.metrics import model_spend_observed
from ballet.queue import DeliveryQueue
from ballet.sessionlog.objects import LogStoreConfigError
from ballet.sessionlog.store import SessionLogs
from ballet.sessions import GitIdentity, SessionOptions, Workspaces, remote_refs
from ballet.sessions.branch_writes import MirrorBranches
from ballet.sessions.confine import Isolation
from ballet.sessions.confine.cgroups import detect as detect_cgroups
from ballet.sessions.confine.limits import LimitPlan, plan_limits, prepare_cgroups
from ballet.sessions.disk import can_mount
from ballet.sessions.gateway import ModelGateway, MonthlyCaps, ProviderMetering, parse_upstreams
from ballet.settings import Settings
from ballet.skills import builtin_skills
from ballet.spend_ledger import SpendLedger
from ballet.tickets.drain import Later
from ballet.tickets.interpret import SessionLauncher
from ballet.tickets.links import TicketLinksReader
from ballet.tickets.live import LiveTickets
from ballet.tickets.memo import Memo
from ballet.tickets.page_links import PageLinks
from ballet.tickets.report_comments import ReportComments
from ballet.tickets.return_reads import ReturnReads
from ballet.tickets.service import TicketService
from ballet.tickets.source import GitHubTicketSource
from ballet.tickets.store import RecordStore
from ballet.tickets.ticket_forges import InstallationForges

log = structlog.get_logger("ballet.services")


def default_runtime(settings: Settings) -> Runtime:
    """The runtime of repositories without a `.ballet.yml`: the deployment's choice."""
    return Runtime(
        adapter=settings.default_adapter,
        model=settings.default_model,
        env=settings.default_runtime_env,
    )


async def build_services(settings: Settings, redis: ArqRedis) -> Services:
    """The production services of a worker process."""
    launcher = ArqSessionLauncher(
        redis,
        worker_id=settings.worker_id,
        pools=settings.worker_pools,
        affinity_seconds=settings.session_affinity_seconds,
    )
    # One set of mirrors per worker: the sessions clone from them and the ticket
    # service pushes a ticket's branch from them (so its start warms them too). Their
    # refreshes ask GitHub's refs over one kept-alive pool before fetching.
    refs_http = remote_refs.new_client()
    workspaces = Workspaces(settings.workspaces, refs_http=refs_http)
    try:
        edge = await build_edge(
            settings,
            redis,
            launcher,
            workspaces=workspaces,
            default_runtime=default_runtime(settings),
            later=partial(drain_later, redis),
        )
    except EdgeConfigError as exc:
        # Ballet still starts, so a new install can check its webhook wiring:
        # deliveries are verified, queued, counted and logged, but not acted on.
        log.warning(
            f"no GitHub App configured, deliveries are only logged: {exc}; then"
            " redeliver from the App's settings any delivery that should start a ticket"
        )
        await refs_http.aclose()  # no session runs: nothing refreshes a mirror
        return services_for(settings, redis, LoggingConsumer())
    session_jobs = session_jobs_for(
        settings,
        redis,
        edge.store,
        edge.github.for_installation,
        find_installation=edge.github.installation_of,
        installations=edge.github.installations,
        ballet_login=edge.identity.bot_login if edge.identity else None,
        workspaces=workspaces,
    )
    launcher.prefetch = session_jobs.prefetch
    # Closed in reverse: the refs' client after the prefetch's refreshes that use it.
    closers: tuple[Callable[[], Awaitable[None]], ...] = (edge.aclose, refs_http.aclose)
    if session_jobs.prefetch is not None:
        closers += (session_jobs.prefetch.aclose,)
    # Clones prepared for sessions that never came (the ticket ended), and any workspace
    # a job still ending holds: gone with the worker, their disks unmounted.
    closers += (session_jobs.workspaces.aclose,)
    return services_for(
        settings,
        redis,
        edge.service,
        tickets=edge.service,
        session_jobs=session_jobs,
        redeliveries=Redeliveries(
            redis,
            edge.github,
            clock=lambda: datetime.now(UTC),
            settle=timedelta(seconds=settings.redelivery_settle_seconds),
        ),
        closers=closers,
    )


def services_for(
    settings: Settings,
    redis: ArqRedis,
    consumer: DeliveryConsumer,
    *,
    tickets: TicketEventHandler | None = None,
    session_jobs: SessionJobs | None = None,
    redeliveries: Redeliveries | None = None,
    closers: tuple[Callable[[], Awaitable[None]], ...] = (),
) -> Services:
    """A worker's services around the given parts; the one place a `Services` is made
    (tests pass their own consumer or ticket handler here)."""
    return Services(
        settings=settings,
        redis=redis,
        deliveries=DeliveryQueue(redis, settings.delivery_dedupe_seconds),
        consumer=consumer,
        tickets=tickets,
        session_jobs=session_jobs,
        redeliveries=redeliveries,
        closers=list(closers),
    )


class EdgeConfigError(ValueError):
    """The settings cannot run the GitHub edge; the message says which to set."""


@dataclass
class GitHubEdge:
    github: GitHubApp
    store: RecordStore
    service: TicketService
    identity: AppIdentity | None = None

    async def aclose(self) -> None:
        await self.github.aclose()


async def build_edge(
    settings: Settings,
    redis: Redis,
    launcher: SessionLauncher,
    *,
    default_runtime: Runtime | None = None,
    workspaces: Workspaces | None = None,  # with them, branch writes are git pushes
    later: Later | None = None,  # drains a ticket when a deferred write is due
) -> GitHubEdge:
    if settings.app_id is None:
        raise EdgeConfigError("set BALLET_APP_ID to the GitHub App's id")
    key = settings.private_key_pem()
    if not key:
        raise EdgeConfigError(
            "set BALLET_PRIVATE_KEY (PEM text) or BALLET_PRIVATE_KEY_PATH to the App's private key"
        )
    github = GitHubApp(
        GitHubAppCredentials(settings.app_id, key, settings.github_api_url),
        redis,
        write_spacing_seconds=settings.write_spacing_seconds,
        writes_per_hour=settings.writes_per_hour,
    )
    identity = await github.app_identity()
    store = RecordStore(redis, own_login=identity.bot_login)
    branches = None
    if workspaces is not None:
        # The seed commit is the App bot's, as GitHub makes one through the API.
        bot = GitIdentity(identity.bot_login, f"{identity.bot_login}@users.noreply.github.com")
        branches = MirrorBranches(workspaces, bot)
    service = TicketService(
        github.for_installation,
        store,
        Memo(redis),
        launcher,
        app=identity,
        default_runtime=default_runtime,
        clock=lambda: datetime.now(UTC),
        live_tickets=LiveTickets(redis),
        find_installation=github.installation_of,
        pages=page_links(settings, redis),
        pools=settings.pools,
        branches=branches,
        write_grace=timedelta(seconds=settings.write_grace_seconds),
        later=later,
        trusted_bots=settings.trusted_bots,
    )
    return GitHubEdge(github=github, store=store, service=service, identity=identity)


def page_links(settings: Settings, redis: Redis) -> PageLinks | None:
    """Ballet's pages as GitHub links them, where it has a public address; the log
    store is read for a check run's text (None: the check runs carry no log)."""
    if settings.public_url is None:
        return None
    try:
        logs = SessionLogs.from_settings(settings, redis)
    except LogStoreConfigError:
        logs = None  # the worker refuses such settings at start; a test may not
    return PageLinks(settings.public_url, logs)


def session_jobs_for(
    settings: Settings,
    redis: ArqRedis,
    store: RecordStore,
    forges: InstallationForges,
    *,
    parent_env: Mapping[str, str] | None = None,
    find_installation: Callable[[str], Awaitable[int | None]] | None = None,
    installations: Callable[[], Awaitable[tuple[int, ...]]] | None = None,
    clone_urls: Callable[[str], str] | None = None,
    options: SessionOptions | None = None,
    heartbeat_seconds: float | None = None,
    ballet_login: str | None = None,
    workspaces: Workspaces | None = None,
) -> SessionJobs:
    """The production wiring, from the GitHub edge's record store and forges
    (`GitHubEdge.store`, `GitHubEdge.github.for_installation`,
    `GitHubEdge.github.installation_of`). Tests pass where to clone from, the
    session options (e.g. a test's own confinement) and a faster heartbeat.
    `ballet_login`: the App's bot; only its comments are read back as reports."""
    tickets = GitHubTicketSource(
        store,
        forges,
        clone_urls=clone_urls,
        find_installation=find_installation,
        installations=installations,
    )
    if workspaces is None or parent_env is not None:
        workspaces = Workspaces(settings.workspaces, parent_env=parent_env)
    jobs = SessionJobs(
        redis=redis,
        tickets=tickets,
        links=TicketLinksReader(redis, tickets.reader_for, store.cached, own_login=ballet_login),
        workspaces=workspaces,
        prefetch=SessionPrefetch(workspaces, tickets),
        artifacts=Artifacts(redis, reports=ReportComments(tickets.forge_for, author=ballet_login)),
        parent_env=parent_env,
        options=with_gateway(
            options or SessionOptions(isolation=isolation_for(settings)), settings, redis
        ),
        builtin_skills=builtin_skills(),
        crash_retries=settings.session_crash_retries,
        returns=ReturnReads(tickets.forge_for, own_app_id=settings.app_id),
        logs=SessionLogs.from_settings(settings, redis),
        heartbeat_seconds=settings.session_heartbeat_seconds,
    )
    if heartbeat_seconds is not None:
        jobs = replace(jobs, heartbeat_seconds=heartbeat_seconds)
    return jobs


def with_gateway(options: SessionOptions, settings: Settings, redis: Redis) -> SessionOptions:
    """The worker's model gateway: its ledger in Redis, the operator's caps and upstreams."""
    if options.gateway is not None:
        return options
    gateway = ModelGateway(
        ProviderMetering(),
        ledger=SpendLedger(redis),
        monthly=MonthlyCaps(
            settings.budget_repository_monthly_usd, settings.budget_installation_monthly_usd
        ),
        upstreams=parse_upstreams(settings.provider_upstreams),  # says what to write if wrong
        observe=model_spend_observed,
    )
    return replace(options, gateway=gateway)


def isolation_for(settings: Settings) -> Isolation:
    """How this deployment confines its sessions (docs/security.md)."""
    secrets = [settings.data_dir, settings.workspaces, settings.private_key_path]
    secrets.append(settings.loaded_from)
    return Isolation(
        mode=settings.session_isolation,
        egress_allow=tuple(parse_rule(r, trusted=True) for r in settings.session_egress_allow),
        readonly_paths=settings.session_readonly_paths,
        hidden_paths=tuple(Path(p).resolve() for p in secrets if p is not None),
        blocked_hosts=frozenset(h for h in (urlsplit(settings.github_api_url).hostname,) if h),
        limits=limits_for(settings),
    )


def limits_for(settings: Settings) -> LimitPlan:
    """What each session may use on this worker, and how it is enforced: the operator's
    limits, else the defaults this machine can enforce (LimitsUnavailable: a limit set
    that it cannot). The cgroups are made ready for sessions (once)."""
    plan = plan_limits(
        settings.session_limits,
        slots=settings.session_slots,
        cgroups=detect_cgroups(),
        can_mount=can_mount(),
    )
    prepare_cgroups(plan)
    return plan
