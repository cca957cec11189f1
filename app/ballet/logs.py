"""Logging: structlog for Ballet's own events, with uvicorn's and arq's stdlib
logs rendered through the same processors so a process writes one format.

Called once by each command after the settings are read.
"""

from __future__ import annotations

import errno
import logging
import math
import sys
import time
from collections.abc import Callable

import structlog
from structlog.typing import Processor


def configure_logging(level: str = "info", json: bool = False) -> None:
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}: use debug, info, warning or error")
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            # Drop below-level events before any work is spent rendering them.
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.processors.format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    handler.addFilter(ExhaustionThrottle())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # Request lines are noise at webhook rates; Ballet logs each delivery itself.
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)


# Out of descriptors or socket memory: what "Too many open files" is made of.
_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_EXHAUSTED_TEXT = ("Too many open files", "out of system resource")


class ExhaustionThrottle(logging.Filter):
    """One record a while about the process running out of descriptors, the next
    one saying how many were held back. When accept() fails so, asyncio logs it,
    traceback and all, every second, and everything else that opens a file then
    fails with lines of its own: a flood that can fill a disk and bury the cause."""

    def __init__(
        self, every_seconds: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._every = every_seconds
        self._clock = clock
        self._last = -math.inf
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not _about_exhaustion(record):
            return True
        now = self._clock()
        if now - self._last < self._every:
            self._held += 1
            return False
        self._last = now
        if self._held:
            note = f"{self._held} more like it held back in the last {self._every:g} s"
            if isinstance(record.msg, dict):  # structlog's event, rendered later
                record.msg = {**record.msg, "held_back": note}
            else:
                record.msg, record.args = f"{record.getMessage()} ({note})", None
            self._held = 0
        return True


def _about_exhaustion(record: logging.LogRecord) -> bool:
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, OSError) and exc.errno in _EXHAUSTED:
        return True
    text = str(record.msg)
    return any(words in text for words in _EXHAUSTED_TEXT)
