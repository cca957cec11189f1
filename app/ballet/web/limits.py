"""How many connections the web process may hold, sized to its open-file limit.

Every connection is a file descriptor. When accept() finds none left, the
process is in trouble beyond the web app: asyncio logs "out of system
resource" each second, uvloop closes its listening socket for good, and the
worker beside it under `ballet serve` cannot open a Redis connection or a
session's pipe. So the soft RLIMIT_NOFILE is raised to the hard one at start,
and the connections are held to a number that leaves room below it for an
accept burst (at most the listen backlog before any connection is looked at)
and for everything else the process opens.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

from ballet.settings import Settings

# A request head (request line, headers, cookies) larger than this is refused:
# httptools itself sets no limit, and GitHub's and a browser's are a few KiB.
MAX_HEAD_BYTES = 64 * 1024
# uvicorn's own backlog; fewer when descriptors are scarce.
MAX_BACKLOG = 2048
# Descriptors kept for everything but connections: Redis, logs, the worker's
# sessions under `ballet serve` (a quarter of the limit, at least this many).
MIN_RESERVED = 64


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int  # held at once; past it the oldest idle one is closed, else 503
    backlog: int  # the listen queue, and so the most accepted in one burst
    idle_seconds: float  # for a whole request head, from connect or the last response
    body_seconds: float  # for a whole request body, from its head
    max_head_bytes: int = MAX_HEAD_BYTES


def fit_to_open_files(
    open_files: int, wanted_connections: int, idle_seconds: float, body_seconds: float
) -> ConnectionLimits:
    """Limits that keep connections, an accept burst and the rest within `open_files`."""
    reserved = max(MIN_RESERVED, open_files // 4)
    backlog = max(16, min(MAX_BACKLOG, open_files // 8))
    room = open_files - reserved - backlog
    if room < 16:
        raise ValueError(
            f"only {open_files} open files are allowed to this process: too few to serve;"
            " raise its limit (ulimit -n, or the container's nofile) to 1024 or more"
        )
    return ConnectionLimits(
        max_connections=min(wanted_connections, room),
        backlog=backlog,
        idle_seconds=idle_seconds,
        body_seconds=body_seconds,
    )


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one; the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        # No hard limit to raise to (the kernel's nr_open still applies): keep the soft one.
        return soft if soft != resource.RLIM_INFINITY else 1 << 20
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def connection_limits(settings: Settings) -> ConnectionLimits:
    """This process's limits: its open-file limit raised, the settings fitted below it."""
    return fit_to_open_files(
        raise_open_file_limit(),
        settings.web_max_connections,
        settings.web_idle_seconds,
        settings.web_body_seconds,
    )
