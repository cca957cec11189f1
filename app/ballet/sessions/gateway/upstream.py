"""Where each provider's requests go, and the worker's connections to them.

A provider's upstream is, first found: the runtime's `base_url` (the CLI no
longer talks to it: the gateway does), the operator's BALLET_PROVIDER_UPSTREAMS
entry, the provider's public API. Each is the base the CLI's own path is put
under: `https://api.anthropic.com` for `/v1/messages`, `https://api.openai.com/v1`
for `/responses` and `/chat/completions`, Gemini's host for `/v1beta/models/…`.

The client is Ballet's own, small on purpose: HTTP/1.1 on asyncio streams (TLS
to the real providers, verified against the system's CAs), answers parsed by
httptools (llhttp, the parser uvicorn uses) in reads of up to 256 KiB, their
body handed on chunk by chunk as it arrives. httpx, tried first, parsed a 10 MB
stream at a sixth of the speed of the bytes arriving (bench/gateway.py). Idle
connections are kept per worker and origin and reused; one idle longer than
a provider keeps it open is not.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httptools

from ballet.core.provider_keys import Provider

PUBLIC_APIS: Mapping[Provider, str] = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com",
}
CONNECT_TIMEOUT_SECONDS = 15.0
IDLE_SECONDS = 30.0  # under the providers' own keep-alive time
IDLE_PER_ORIGIN = 64
READ_BYTES = 1 << 18
Headers = list[tuple[bytes, bytes]]


class UpstreamError(OSError):
    """The upstream could not be reached, or broke off before its answer's head."""


def upstream_of(provider: Provider, base_url: str | None, operator: Mapping[Provider, str]) -> str:
    return (base_url or operator.get(provider) or PUBLIC_APIS[provider]).rstrip("/")


@dataclass
class _Parsed:
    """httptools' callbacks: the head, then body chunks as they are parsed."""

    headers: Headers = field(default_factory=list)
    head_done: bool = False
    keep_alive: bool = False
    parser: httptools.HttpResponseParser | None = None
    chunks: list[bytes] = field(default_factory=list)
    done: bool = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.head_done = True
        # Asked now: once the message is complete the parser has moved on to the next.
        self.keep_alive = self.parser is not None and self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.done = True


@dataclass
class _Connection:
    origin: str
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = 0.0

    def usable(self) -> bool:
        fresh = time.monotonic() - self.idle_since < IDLE_SECONDS
        return fresh and not self.reader.at_eof() and not self.writer.is_closing()


class Answer:
    """An upstream's answer: its head, and its body as an async iterator of chunks."""

    def __init__(
        self, clients: UpstreamClients, connection: _Connection, parser: Parsing, parsed: _Parsed
    ) -> None:
        self.status = parser.get_status_code()
        self.headers = parsed.headers
        self._clients, self._connection = clients, connection
        self._parser, self._parsed = parser, parsed
        self._whole = False

    async def body(self) -> AsyncIterator[bytes]:
        parsed = self._parsed
        while True:
            chunks, parsed.chunks = parsed.chunks, []
            for chunk in chunks:
                yield chunk
            if parsed.done:
                self._whole = True
                return
            data = await self._connection.reader.read(READ_BYTES)
            if not data:  # a body delimited by the connection's end
                return
            self._parser.feed_data(data)

    def close(self) -> None:
        """Back to the pool when the answer was read whole on a kept-alive connection."""
        if self._whole and self._parsed.keep_alive:
            self._clients.release(self._connection)
        else:
            self._connection.writer.close()


Parsing = httptools.HttpResponseParser


class UpstreamClients:
    """The worker's connections to the upstreams, kept alive per origin."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._tls = tls
        self._idle: dict[str, list[_Connection]] = {}

    async def send(
        self, method: str, url: str, headers: Headers, body: AsyncIterator[bytes] | None
    ) -> Answer:
        """Send a request, its body streamed as it comes (chunked unless `headers` give its
        length); the answer once its head has arrived."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection = await self._connection(parts.scheme, parts.hostname or "", parts.port)
        try:
            chunked = body is not None and not any(n == b"content-length" for n, _ in headers)
            head = [f"{method} {target} HTTP/1.1\r\nhost: {parts.netloc}\r\n".encode()]
            head += [name + b": " + value + b"\r\n" for name, value in headers]
            head.append(b"transfer-encoding: chunked\r\n\r\n" if chunked else b"\r\n")
            # The head goes with the body's first piece: one write for a small request.
            pending = b"".join(head)
            if body is not None:
                async for chunk in body:
                    if chunk:
                        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk
                        connection.writer.write(pending + framed if pending else framed)
                        pending = b""
                        await connection.writer.drain()
                if chunked:
                    pending += b"0\r\n\r\n"
            connection.writer.write(pending)
            await connection.writer.drain()
            parsed = _Parsed()
            parser = parsed.parser = Parsing(parsed)
            while not parsed.head_done:
                data = await connection.reader.read(READ_BYTES)
                if not data:
                    raise UpstreamError(f"{connection.origin} closed the connection unanswered")
                parser.feed_data(data)
        except (OSError, httptools.HttpParserError) as error:
            connection.writer.close()
            raise UpstreamError(f"{connection.origin}: {error}") from error
        except BaseException:
            connection.writer.close()
            raise
        return Answer(self, connection, parser, parsed)

    async def _connection(self, scheme: str, host: str, port: int | None) -> _Connection:
        origin = f"{scheme}://{host}:{port or (443 if scheme == 'https' else 80)}"
        idle = self._idle.get(origin, [])
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
            connection.writer.close()
        tls = self._tls_context() if scheme == "https" else None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    host, port or (443 if tls else 80), ssl=tls, limit=READ_BYTES
                ),
                CONNECT_TIMEOUT_SECONDS,
            )
        except (OSError, TimeoutError) as error:
            raise UpstreamError(f"could not connect to {origin}: {error!r}") from error
        return _Connection(origin, reader, writer)

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def release(self, connection: _Connection) -> None:
        idle = self._idle.setdefault(connection.origin, [])
        if len(idle) >= IDLE_PER_ORIGIN:
            connection.writer.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.writer.close()
                with contextlib.suppress(OSError):
                    await connection.writer.wait_closed()
