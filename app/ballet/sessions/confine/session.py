"""Confining one session: its egress proxy, its sandbox's command line and environment.

`confined()` is used around the session's process: it starts the session's
egress proxy on a fresh unix socket, wraps the runtime's argv in bubblewrap
and points the proxy variables at the in-sandbox relay; when the block ends
the sandbox's init is killed and waited for (nothing of the session outlives
the block), the proxy stops and its socket goes. With isolation `none` it
changes nothing and says so, loudly, for every session.

With the deployment's limits (`Isolation.limits`) and the session's own
(`limits`), the process starts in a cgroup of its own, within rlimits
(limits.py), bwrap's /tmp is the workspace's own (on its size-limited disk)
or a tmpfs of the disk's size; the cgroup is read and removed once the
sandbox's init has gone, the reaper's kill and the cgroup's agreeing that
nothing of the session is left.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog

from ballet.core.egress import EgressRule, is_loopback_host
from ballet.core.session_limits import LIMIT_NAMES, LimitValues
from ballet.sessions.confine.bwrap import (
    INSIDE_GATEWAY,
    RelaySpec,
    SandboxLayout,
    ballet_python_paths,
    bwrap_argv,
    tool_paths,
)
from ballet.sessions.confine.cgroups import SessionCgroup
from ballet.sessions.confine.limits import (
    CGROUP_LIMITS,
    LimitPlan,
    LimitUsage,
    SessionLimiter,
    limited_argv,
)
from ballet.sessions.confine.proxy import EgressPolicy, EgressProxy, policy_for
from ballet.sessions.confine.reaper import SandboxInit
from ballet.sessions.confine.seccomp import deny_filter, filter_fd

log = structlog.get_logger("ballet.sessions.confine")

IsolationMode = Literal["bwrap", "none"]
PROXY_PORT = 3128  # inside the sandbox's own network namespace: never taken by anything else
GATEWAY_PORT = 3130  # the model gateway's, inside: it wins over an operator's forward there
PROXY_VARIABLES = (
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "ALL_PROXY",
    "https_proxy",
    "http_proxy",
    "all_proxy",
)
UNCONFINED_WARNING = (
    "session runs UNCONFINED (BALLET_SESSION_ISOLATION=none): its agent can read the "
    "worker's files, environment and memory and reach any network; see docs/security.md"
)


@dataclass(frozen=True)
class Isolation:
    """How sessions are confined; built once from the settings (`isolation_for`)."""

    mode: IsolationMode = "bwrap"
    egress_allow: tuple[EgressRule, ...] = ()  # the operator's: may name loopback services
    readonly_paths: tuple[Path, ...] = ()  # the operator's tools outside the system dirs
    hidden_paths: tuple[Path, ...] = ()  # secrets never shown (data dir, key, env file)
    blocked_hosts: frozenset[str] = frozenset()  # the GitHub API's host
    bwrap: str = "bwrap"
    # What each session may use and how it is enforced (None: no limits, as in tests).
    limits: LimitPlan | None = None
    # Bound read-write into every session: only for a test watching sessions from
    # outside. No setting reaches it (it would be a channel between sessions).
    test_writable: tuple[Path, ...] = ()
    # Only for the test that subverts the sandbox's init (ptrace) to show the worker
    # ends the sandbox anyway; no setting reaches it.
    test_without_seccomp: bool = False


@dataclass(frozen=True)
class SessionSandbox:
    """What the process of one session runs as, and its proxy (None: unconfined)."""

    argv: list[str]
    env: dict[str, str]
    proxy: EgressProxy | None = None
    init: SandboxInit | None = None  # bwrap's init, ended by the worker (reaper.py)
    seccomp_fd: int | None = None
    limiter: SessionLimiter | None = None  # its cgroup and disk, watched (limits.py)

    @property
    def pass_fds(self) -> tuple[int, ...]:
        fds = (self.init.write_fd,) if self.init else ()
        return fds + ((self.seccomp_fd,) if self.seccomp_fd is not None else ())

    def spawned(self) -> None:
        if self.init:
            self.init.spawned()
        if self.limiter:
            self.limiter.spawned()

    async def ended(self) -> None:
        if self.init:
            await self.init.end()
        if self.limiter:  # after the init: whatever the reaper left, the cgroup kills
            await self.limiter.ended()

    @property
    def limits(self) -> LimitValues | None:
        return self.limiter.values if self.limiter else None

    @property
    def usage(self) -> LimitUsage | None:
        return self.limiter.usage if self.limiter else None

    @property
    def refused(self) -> list[str]:
        return self.proxy.refused if self.proxy else []

    @property
    def refused_count(self) -> int:
        return self.proxy.refused_count if self.proxy else 0

    @property
    def allowed(self) -> int:
        return self.proxy.allowed if self.proxy else 0


@dataclass(frozen=True)
class SessionPaths:
    clone: Path
    home: Path
    files: Path
    mirror_objects: Path
    workspaces_root: Path
    tmp: Path | None = None  # the workspace's own /tmp, on its size-limited disk
    companions: Path | None = None  # the clones of the ticket's other repositories


@contextlib.asynccontextmanager
async def confined(
    isolation: Isolation,
    paths: SessionPaths,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    runtime_rules: Sequence[EgressRule],
    session: str,
    limits: LimitValues | None = None,
    gateway_socket: Path | None = None,
) -> AsyncIterator[SessionSandbox]:
    """The session's sandboxed argv and environment for the duration of the block.
    `runtime_rules` are the adapter's provider hosts and the runtime's `egress:`;
    `limits` the session's own (`core.session_limits.effective_limits`), enforced
    where `isolation.limits` says this worker can; `gateway_socket` the session's
    model gateway (gateway/), served inside on 127.0.0.1:GATEWAY_PORT."""
    limiter = _limiter(isolation.limits, limits, paths)
    try:
        if isolation.mode == "none":
            log.warning(UNCONFINED_WARNING, session=session)
            yield SessionSandbox(_limited(list(argv), limiter), dict(env), limiter=limiter)
            return
        async with _sandboxed(
            isolation, paths, argv, env, runtime_rules, session, limiter, gateway_socket
        ) as box:
            yield box
    finally:
        if limiter is not None:
            await limiter.ended()


def _limiter(
    plan: LimitPlan | None, limits: LimitValues | None, paths: SessionPaths
) -> SessionLimiter | None:
    if plan is None or limits is None or all(getattr(limits, n) is None for n in LIMIT_NAMES):
        return None
    cgroup = None
    if plan.cgroups is not None and any(getattr(limits, n) is not None for n in CGROUP_LIMITS):
        cgroup = SessionCgroup.create(plan.cgroups, limits)
    return SessionLimiter(limits, cgroup, paths.tmp)


def _limited(argv: list[str], limiter: SessionLimiter | None) -> list[str]:
    return argv if limiter is None else limited_argv(argv, limiter.values, limiter.cgroup)


@contextlib.asynccontextmanager
async def _sandboxed(
    isolation: Isolation,
    paths: SessionPaths,
    argv: Sequence[str],
    env: Mapping[str, str],
    runtime_rules: Sequence[EgressRule],
    session: str,
    limiter: SessionLimiter | None,
    gateway_socket: Path | None,
) -> AsyncIterator[SessionSandbox]:
    policy = policy_for(isolation.egress_allow, runtime_rules, isolation.blocked_hosts)
    # A short path of our own: unix socket paths are limited to 107 bytes.
    socket_dir = Path(tempfile.mkdtemp(prefix="ballet-egress-"))
    proxy = EgressProxy(policy, socket_dir / "proxy.sock", session)
    init = SandboxInit()
    program = None
    if not isolation.test_without_seccomp:
        program = deny_filter()
        if program is None:
            log.warning("no seccomp filter for this architecture", session=session)
    seccomp_fd = filter_fd(program) if program is not None else None
    try:
        await proxy.start()
        relay = relay_spec(policy, gateway=gateway_socket is not None)
        layout = SandboxLayout(
            clone=paths.clone,
            home=paths.home,
            files=paths.files,
            mirror_objects=paths.mirror_objects,
            egress_socket=proxy.path,
            gateway_socket=gateway_socket,
            readonly=(
                *ballet_python_paths(),
                *tool_paths(env.get("PATH", "")),
                *isolation.readonly_paths,
            ),
            hidden=(paths.workspaces_root, *isolation.hidden_paths),
            writable=(*isolation.test_writable, *filter(None, (paths.companions,))),
            tmp=paths.tmp,
            tmp_size=limiter.values.disk if limiter and not paths.tmp else None,
        )
        sandbox = bwrap_argv(
            layout,
            relay,
            argv,
            bwrap=isolation.bwrap,
            info_fd=init.write_fd,
            seccomp_fd=seccomp_fd,
        )
        yield SessionSandbox(
            _limited(sandbox, limiter),
            {**env, **proxy_environment(relay.proxy_port, gateway=gateway_socket is not None)},
            proxy,
            init,
            seccomp_fd,
            limiter,
        )
    finally:
        await init.end()  # nothing of the session runs past this block
        if seccomp_fd is not None:
            os.close(seccomp_fd)
        await proxy.aclose()
        shutil.rmtree(socket_dir, ignore_errors=True)


def relay_spec(policy: EgressPolicy, *, gateway: bool = False) -> RelaySpec:
    """Forward each loopback service the operator allowed to the same port inside, and
    the model gateway's port straight to its socket."""
    forwards = {
        rule.port: str(rule)
        for rule in policy.rules
        if rule.trusted and not rule.host.startswith("*.") and is_loopback_host(rule.host)
    }
    if gateway:
        forwards[GATEWAY_PORT] = INSIDE_GATEWAY
    proxy_port = PROXY_PORT
    while proxy_port in forwards:
        proxy_port += 1
    return RelaySpec(proxy_port, tuple(sorted(forwards.items())))


def proxy_environment(port: int, *, gateway: bool = False) -> dict[str, str]:
    url = f"http://127.0.0.1:{port}"
    env = dict.fromkeys(PROXY_VARIABLES, url)
    # Nothing else is direct: loopback is the sandbox's own, where only the relay listens;
    # the model gateway is reached there, not through the egress proxy (which refuses it).
    direct = "127.0.0.1" if gateway else ""
    env.update(NO_PROXY=direct, no_proxy=direct, NODE_USE_ENV_PROXY="1")
    return env
