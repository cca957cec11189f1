"""Bodies as the gateway passes them: a request read whole within a bound, a body
given once, and what a message's headers say of it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import h11


async def bounded(body: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    seen = 0
    async for chunk in body:
        seen += len(chunk)
        if seen > limit:
            raise h11.RemoteProtocolError(f"a Chat Completions request over {limit:,} bytes")
        yield chunk


async def once(data: bytes) -> AsyncIterator[bytes]:
    yield data


def content_type(headers: list[tuple[bytes, bytes]]) -> str:
    found = next((v for n, v in headers if n.lower() == b"content-type"), b"")
    return found.decode("latin-1")


def has_body(request: h11.Request) -> bool:
    return any(name in (b"content-length", b"transfer-encoding") for name, _ in request.headers)
