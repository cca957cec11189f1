"""Where each provider's requests go, and the worker's connections to them.

A provider's upstream is, first found: the runtime's `base_url` (the CLI no
longer talks to it: the gateway does), the operator's BALLET_PROVIDER_UPSTREAMS
entry, the provider's public API. Each is the base the CLI's own path is put
under: `https://api.anthropic.com` for `/v1/messages`, `https://api.openai.com/v1`
for `/responses` and `/chat/completions`, Gemini's host for `/v1beta/models/…`.

The client is Ballet's own, small on purpose: HTTP/1.1 on an asyncio buffered
protocol (receiving.py; TLS to the real providers, verified against the
system's CAs). The body is handed on as it comes, all of what has come at once
(an upstream's many small events go down as one piece), or, for a chunked
answer on plain HTTP, spliced (`Answer.raw`, splicing.py). httpx, tried first,
parsed a 10 MB stream at a sixth of the speed of the bytes arriving
(bench/gateway.py); asyncio's streams copied every byte twice more than this
does. Idle connections are kept per worker and origin and reused; one idle
longer than a provider keeps it open is not.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httptools

from ballet.core.provider_keys import Provider
from ballet.sessions.gateway.chunk_framing import ChunkedBody, FramingError
from ballet.sessions.gateway.pipes import PipePool
from ballet.sessions.gateway.receiving import Headers, Parsed, Stream, UpstreamError

PUBLIC_APIS: Mapping[Provider, str] = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com",
}
CONNECT_TIMEOUT_SECONDS = 15.0
IDLE_SECONDS = 30.0  # under the providers' own keep-alive time
IDLE_PER_ORIGIN = 64


def upstream_of(provider: Provider, base_url: str | None, operator: Mapping[Provider, str]) -> str:
    return (base_url or operator.get(provider) or PUBLIC_APIS[provider]).rstrip("/")


@dataclass
class _Connection:
    origin: str
    transport: asyncio.Transport
    stream: Stream
    idle_since: float = 0.0

    def usable(self) -> bool:
        fresh = time.monotonic() - self.idle_since < IDLE_SECONDS
        return fresh and not self.stream.eof and not self.transport.is_closing()

    def close(self) -> None:
        self.transport.close()


class Answer:
    """An upstream's answer: its head, and its body as an async iterator of pieces."""

    def __init__(
        self, clients: UpstreamClients, connection: _Connection, parser: Parsing, parsed: Parsed
    ) -> None:
        self.status = parser.get_status_code()
        self._parser = parser
        self.headers = parsed.headers
        self._clients, self._connection = clients, connection
        self._parsed = parsed
        self._whole = False
        # The body that came with the head, as the upstream framed it: the answer may be
        # spliced (None: it may not: TLS, not chunked). Read by `_framing` for a splice
        # (its data in `_raw_data`), by httptools for a relay (`body`).
        self.raw = parsed.raw
        self._framing: ChunkedBody | None = None
        self._raw_data: list[memoryview] = []
        if self.raw is not None:
            self._framing = ChunkedBody()
            try:
                self._raw_data = self._framing.feed(memoryview(self.raw))
            except FramingError:  # not spliced: httptools reads it, and refuses it too
                self.raw, self._framing = None, None

    @property
    def ended(self) -> bool:
        return self._parsed.done or (self._framing is not None and self._framing.ended)

    @property
    def cut_short(self) -> bool:
        """The upstream closed the connection before the end its framing promised (a body
        framed by the connection's end has no other)."""
        framed = (b"content-length", b"transfer-encoding")
        return not self._parsed.done and any(n.lower() in framed for n, _ in self.headers)

    def source(self) -> tuple[int, memoryview, PipePool]:
        """For splicing: the upstream socket, a buffer to read the copy into (the
        connection's: free while reading is paused), the worker's pipes."""
        stream = self._connection.stream
        sock = self._connection.transport.get_extra_info("socket")
        return sock.fileno(), stream.take_buffer(), self._clients.pipes

    def feed(self, data: memoryview) -> list[memoryview]:
        """A copy of what was spliced, parsed: the body's data in it, as views of `data`
        (to be read before `data` is written over). The first call's are also those of the
        body that came with the head."""
        assert self._framing is not None
        found, self._raw_data = self._raw_data, []
        try:
            found += self._framing.feed(data)
        except FramingError as error:
            raise UpstreamError(f"{self._connection.origin}: {error}") from error
        self._parsed.done = self._framing.ended
        return found

    def spliced(self) -> bool:
        """The body was spliced to its end: the connection may serve another answer (not if
        the upstream said more than its answer: then False), and is read again."""
        framing = self._framing
        self._whole = framing is not None and framing.ended and not framing.overrun
        self._connection.stream.taken()
        return self._whole

    async def body(self) -> AsyncIterator[list[bytes]]:
        """All of the body that has come, as it comes: the chunks parsed from what each
        read brought (an upstream's many small events go down as one piece)."""
        parsed, stream = self._parsed, self._connection.stream
        if self.raw is not None:  # not spliced after all: what came with the head first
            raw, self.raw, self._framing, self._raw_data = self.raw, None, None, []
            try:
                self._parser.feed_data(raw)
            except httptools.HttpParserError as error:
                raise UpstreamError(f"{self._connection.origin}: {error}") from error
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
            stream.taken()  # reading stopped at a spliceable head: this answer is read here
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
        self.pipes = PipePool()  # what answers are spliced through (splicing.py)

    async def send(
        self, method: str, url: str, headers: Headers, body: AsyncIterator[bytes] | None
    ) -> Answer:
        """Send a request, its body streamed as it comes (chunked unless `headers` give its
        length); the answer once its head has arrived."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection = await self._connection(parts.scheme, parts.hostname or "", parts.port)
        stream = connection.stream
        parsed = Parsed()
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
            if method.upper() == "HEAD":
                # No body follows whatever the head says of one, and the parser, not told
                # the request was HEAD, would wait for it: the answer ends here, and the
                # connection, its parser still expecting that body, is not reused.
                parsed.done, parsed.raw, parsed.keep_alive = True, None, False
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
                    lambda: Stream(plain=tls is None), host, port or (443 if tls else 80), ssl=tls
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
        self.pipes.close()
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()
                with contextlib.suppress(OSError):
                    await connection.stream.closed
