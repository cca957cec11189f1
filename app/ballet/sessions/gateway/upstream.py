"""Where each provider's requests go, and the worker's connections to them.

A provider's upstream is, first found: the runtime's `base_url` (the CLI no
longer talks to it: the gateway does), the operator's BALLET_PROVIDER_UPSTREAMS
entry, the provider's public API. Each is the base the CLI's own path is put
under: `https://api.anthropic.com` for `/v1/messages`, `https://api.openai.com/v1`
for `/responses` and `/chat/completions`, Gemini's host for `/v1beta/models/…`.

The client is Ballet's own, small on purpose: HTTP/1.1 on an asyncio buffered
protocol (TLS to the real providers, verified against the system's CAs), what
arrives received into one buffer per connection and parsed there by httptools
(llhttp, the parser uvicorn uses): the body's chunks are its only copies. The
body is handed on as it comes, all of what has come at once (an upstream's many
small events go down as one piece); reading waits while more than READ_BYTES of
it is yet to be taken. httpx, tried first, parsed a 10 MB stream at a sixth of
the speed of the bytes arriving (bench/gateway.py); asyncio's streams copied
every byte twice more than this does. Idle
connections are kept per worker and origin and reused; one idle longer than
a provider keeps it open is not.
"""

from __future__ import annotations

import asyncio
import contextlib
import mmap
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
# A receive's most, and the most body waiting to be taken: a 10 MB answer in ~10
# reads, not ~40 (each a wake-up, a parse and a write down: the gateway's CPU per
# such answer 10.4 to 8.5 ms in bench/gateway.py's interleaved runs).
READ_BYTES = 1 << 20
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
    size: int = 0  # of `chunks`
    done: bool = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.head_done = True
        # Asked now: once the message is complete the parser has moved on to the next.
        self.keep_alive = self.parser is not None and self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.size += len(body)

    def on_message_complete(self) -> None:
        self.done = True


class _Stream(asyncio.BufferedProtocol):
    """A connection's protocol: what arrives is received into one buffer and parsed
    there (the body's chunks are the only copies), read no further while more than
    READ_BYTES of body waits to be taken; writes wait while the transport is full."""

    def __init__(self) -> None:
        # Anonymous memory, not a bytearray (which zeroes every page): a connection that
        # only ever carried small answers holds a page or two of it, not all.
        self._buffer = memoryview(mmap.mmap(-1, READ_BYTES))
        self.transport: asyncio.Transport | None = None
        self.parsed: _Parsed | None = None  # the answer being read
        self.eof = False
        self.error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._paused = False
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        parsed = self.parsed
        if parsed is None or parsed.parser is None or self.error is not None:  # idle
            self.error = self.error or UpstreamError("the upstream spoke unasked")
            self._lost()
            return
        try:
            parsed.parser.feed_data(self._buffer[:nbytes])
        except httptools.HttpParserError as error:
            self.error = error
            self._lost()
            return
        if parsed.size > READ_BYTES and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def taken(self) -> None:
        """The body's chunks were taken: read on."""
        if self._paused and self.transport is not None and not self.transport.is_closing():
            self._paused = False
            self.transport.resume_reading()

    def eof_received(self) -> bool | None:
        self.eof = True
        self._wake()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = self.error or exc
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    async def write(self, data: bytes) -> None:
        if self.transport is None or self.eof:
            raise ConnectionResetError("the upstream closed the connection")
        self.transport.write(data)
        if self._writable is not None:
            await self._writable

    async def arrived(self) -> None:
        """Until more has been parsed, or the connection has ended."""
        if self.eof:
            raise self.error or ConnectionResetError("the upstream closed the connection")
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self.error is not None:
            raise self.error

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _lost(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.eof = True
        self._wake()


@dataclass
class _Connection:
    origin: str
    transport: asyncio.Transport
    stream: _Stream
    idle_since: float = 0.0

    def usable(self) -> bool:
        fresh = time.monotonic() - self.idle_since < IDLE_SECONDS
        return fresh and not self.stream.eof and not self.transport.is_closing()

    def close(self) -> None:
        self.transport.close()


class Answer:
    """An upstream's answer: its head, and its body as an async iterator of pieces."""

    def __init__(
        self, clients: UpstreamClients, connection: _Connection, parser: Parsing, parsed: _Parsed
    ) -> None:
        self.status = parser.get_status_code()
        self.headers = parsed.headers
        self._clients, self._connection = clients, connection
        self._parsed = parsed
        self._whole = False

    async def body(self) -> AsyncIterator[list[bytes]]:
        """All of the body that has come, as it comes: the chunks parsed from what each
        read brought (an upstream's many small events go down as one piece)."""
        parsed, stream = self._parsed, self._connection.stream
        while True:
            chunks, parsed.chunks, parsed.size = parsed.chunks, [], 0
            if chunks:
                stream.taken()
                yield chunks
                continue  # more may have come while these went down
            if parsed.done:
                self._whole = True
                return
            if stream.eof and stream.error is None:  # a body delimited by the connection's end
                return
            await stream.arrived()

    def close(self) -> None:
        """Back to the pool when the answer was read whole on a kept-alive connection."""
        self._connection.stream.parsed = None
        if self._whole and self._parsed.keep_alive:
            self._clients.release(self._connection)
        else:
            self._connection.close()


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
        stream = connection.stream
        parsed = _Parsed()
        parser = parsed.parser = Parsing(parsed)
        stream.parsed = parsed
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
                        await stream.write(pending + framed if pending else framed)
                        pending = b""
                if chunked:
                    pending += b"0\r\n\r\n"
            await stream.write(pending)
            while not parsed.head_done:
                if stream.eof and stream.error is None:
                    raise UpstreamError(f"{connection.origin} closed the connection unanswered")
                await stream.arrived()
        except (OSError, httptools.HttpParserError) as error:
            connection.close()
            raise UpstreamError(f"{connection.origin}: {error}") from error
        except BaseException:
            connection.close()
            raise
        return Answer(self, connection, parser, parsed)

    async def _connection(self, scheme: str, host: str, port: int | None) -> _Connection:
        origin = f"{scheme}://{host}:{port or (443 if scheme == 'https' else 80)}"
        idle = self._idle.get(origin, [])
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection
            connection.close()
        tls = self._tls_context() if scheme == "https" else None
        try:
            transport, stream = await asyncio.wait_for(
                asyncio.get_running_loop().create_connection(
                    _Stream, host, port or (443 if tls else 80), ssl=tls
                ),
                CONNECT_TIMEOUT_SECONDS,
            )
        except (OSError, TimeoutError) as error:
            raise UpstreamError(f"could not connect to {origin}: {error!r}") from error
        return _Connection(origin, transport, stream)

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    def release(self, connection: _Connection) -> None:
        idle = self._idle.setdefault(connection.origin, [])
        if len(idle) >= IDLE_PER_ORIGIN:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()
                with contextlib.suppress(OSError):
                    await connection.stream.closed
