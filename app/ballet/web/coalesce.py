"""One socket write per response instead of two.

uvicorn writes a response's status line and headers, then its body, each
with its own `transport.write`, and uvloop sends each at once: two system
calls and two packets, waking the client twice, for every small JSON answer.
Here the connection's transport holds what is written in one turn of the
event loop and sends it together at the end of that turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _CoalescingTransport:
    """The connection's transport, with writes of one loop turn sent together."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        coalescing: Any = _CoalescingTransport(transport, self.loop)
        super().connection_made(coalescing)
