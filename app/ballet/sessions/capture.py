"""Bounded capture of a session's output: the head and a rolling tail, never more.

A session may print 100 MB; the worker keeps `head_bytes` from the start and
the last `tail_bytes`, counts what it dropped, and hands complete stdout lines
(up to a length limit) to a runtime's usage meter as they arrive.
"""

from __future__ import annotations

from collections.abc import Callable

DEFAULT_HEAD_BYTES = 64 * 1024
DEFAULT_TAIL_BYTES = 64 * 1024
# Usage lines (a CLI's final `result` event) are small; longer lines are skipped
# rather than buffered, so one endless line cannot fill memory either.
MAX_LINE_BYTES = 1024 * 1024


class BoundedCapture:
    def __init__(
        self, head_bytes: int = DEFAULT_HEAD_BYTES, tail_bytes: int = DEFAULT_TAIL_BYTES
    ) -> None:
        self._head_limit = head_bytes
        self._tail_limit = tail_bytes
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    def feed(self, data: bytes) -> None:
        self.total_bytes += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data[-self._tail_limit :]
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            del self._tail[:excess]

    @property
    def kept_bytes(self) -> int:
        return len(self._head) + len(self._tail)

    @property
    def dropped_bytes(self) -> int:
        return self.total_bytes - self.kept_bytes

    def text(self) -> str:
        head = self._head.decode("utf-8", "replace")
        if not self._tail:
            return head
        tail = self._tail.decode("utf-8", "replace")
        if self.dropped_bytes:
            return f"{head}\n[… {self.dropped_bytes} bytes not kept …]\n{tail}"
        return head + tail

    def tail_text(self, limit: int) -> str:
        """The last `limit` characters of what was kept."""
        text = self.text()
        return text[-limit:] if len(text) > limit else text


class LineSplitter:
    """Feeds complete lines to `on_line`; lines over `max_line` bytes are skipped."""

    def __init__(self, on_line: Callable[[bytes], None], max_line: int = MAX_LINE_BYTES) -> None:
        self._on_line = on_line
        self._max_line = max_line
        self._partial = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> None:
        start = 0
        while (end := data.find(b"\n", start)) != -1:
            self._take(data[start:end])
            self._emit()
            start = end + 1
        self._take(data[start:])

    def close(self) -> None:
        self._emit()

    def _take(self, piece: bytes) -> None:
        if self._skipping:
            return
        if len(self._partial) + len(piece) > self._max_line:
            self._partial.clear()
            self._skipping = True
        else:
            self._partial += piece

    def _emit(self) -> None:
        if not self._skipping and self._partial:
            self._on_line(bytes(self._partial))
        self._partial.clear()
        self._skipping = False
