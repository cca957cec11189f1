"""Confining one session: its egress proxy, its sandbox's command line and environment.

`confined()` is used around the session's process: it starts the session's
egress proxy on a fresh unix socket, wraps the runtime's argv in bubblewrap
and points the proxy variables at the in-sandbox relay; when the block ends
the sandbox's init is killed and waited for (nothing of the session outlives
the block), the proxy stops and its socket goes. With isolation `none` it
changes nothing and says so, loudly, for every session.
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
from ballet.sessions.confine.bwrap import (
    RelaySpec,
    SandboxLayout,
    ballet_python_paths,
    bwrap_argv,
    tool_paths,
)
from ballet.sessions.confine.proxy import EgressPolicy, EgressProxy, policy_for
from ballet.sessions.confine.reaper import SandboxInit
from ballet.sessions.confine.seccomp import deny_filter, filter_fd

log = structlog.get_logger("ballet.sessions.confine")

IsolationMode = Literal["bwrap", "none"]
PROXY_PORT = 3128  # inside the sandbox's own network namespace: never taken by anything else
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

    @property
    def pass_fds(self) -> tuple[int, ...]:
        fds = (self.init.write_fd,) if self.init else ()
        return fds + ((self.seccomp_fd,) if self.seccomp_fd is not None else ())

    def spawned(self) -> None:
        if self.init:
            self.init.spawned()

    async def ended(self) -> None:
        if self.init:
            await self.init.end()

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


@contextlib.asynccontextmanager
async def confined(
    isolation: Isolation,
    paths: SessionPaths,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    runtime_rules: Sequence[EgressRule],
    session: str,
) -> AsyncIterator[SessionSandbox]:
    """The session's sandboxed argv and environment for the duration of the block.
    `runtime_rules` are the adapter's provider hosts and the runtime's `egress:`."""
    if isolation.mode == "none":
        log.warning(UNCONFINED_WARNING, session=session)
        yield SessionSandbox(list(argv), dict(env))
        return
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
        relay = relay_spec(policy)
        layout = SandboxLayout(
            clone=paths.clone,
            home=paths.home,
            files=paths.files,
            mirror_objects=paths.mirror_objects,
            egress_socket=proxy.path,
            readonly=(
                *ballet_python_paths(),
                *tool_paths(env.get("PATH", "")),
                *isolation.readonly_paths,
            ),
            hidden=(paths.workspaces_root, *isolation.hidden_paths),
            writable=isolation.test_writable,
        )
        yield SessionSandbox(
            bwrap_argv(
                layout,
                relay,
                argv,
                bwrap=isolation.bwrap,
                info_fd=init.write_fd,
                seccomp_fd=seccomp_fd,
            ),
            {**env, **proxy_environment(relay.proxy_port)},
            proxy,
            init,
            seccomp_fd,
        )
    finally:
        await init.end()  # nothing of the session runs past this block
        if seccomp_fd is not None:
            os.close(seccomp_fd)
        await proxy.aclose()
        shutil.rmtree(socket_dir, ignore_errors=True)


def relay_spec(policy: EgressPolicy) -> RelaySpec:
    """Forward each loopback service the operator allowed to the same port inside."""
    forwards = {
        rule.port: str(rule)
        for rule in policy.rules
        if rule.trusted and not rule.host.startswith("*.") and is_loopback_host(rule.host)
    }
    proxy_port = PROXY_PORT
    while proxy_port in forwards:
        proxy_port += 1
    return RelaySpec(proxy_port, tuple(sorted(forwards.items())))


def proxy_environment(port: int) -> dict[str, str]:
    url = f"http://127.0.0.1:{port}"
    env = dict.fromkeys(PROXY_VARIABLES, url)
    # Nothing is direct: even loopback is the sandbox's own, where only the relay listens.
    env.update(NO_PROXY="", no_proxy="", NODE_USE_ENV_PROXY="1")
    return env
