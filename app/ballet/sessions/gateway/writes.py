"""Writing an answer down to the session: what each read brought, in one system call,
not joined first.

asyncio 3.11's transports have no gathering write: `writelines` joins its pieces
into a new bytes, one more copy of every byte of every answer. While nothing waits
in the transport's buffer the pieces go straight to the socket with `os.writev`,
as the transport's own `write` would send first; only what the socket did not take
waits in that buffer (then joined), so the order of the bytes is the transport's.
"""

from __future__ import annotations

import asyncio
import os

IOV_MAX = 1024  # Linux's bound on the pieces of one writev


async def write_down(writer: asyncio.StreamWriter, parts: list[bytes]) -> None:
    """`parts`, in order, then drain(): it waits only past the high-water mark."""
    transport = writer.transport
    sock = writer.get_extra_info("socket")
    plain = sock is not None and writer.get_extra_info("sslcontext") is None  # no TLS to skip
    if plain and not transport.get_write_buffer_size() and len(parts) <= IOV_MAX:
        try:
            sent = os.writev(sock.fileno(), parts)
        except (BlockingIOError, InterruptedError):
            sent = 0
        parts = _after(parts, sent)
    if parts:
        writer.writelines(parts)
    await writer.drain()


def _after(parts: list[bytes], sent: int) -> list[bytes]:
    """What of `parts` is left once their first `sent` bytes have gone."""
    for i, part in enumerate(parts):
        if sent < len(part):
            return [part[sent:], *parts[i + 1 :]] if sent else parts[i:]
        sent -= len(part)
    return []
