"""Receiving an upstream's answer on one connection: an asyncio buffered protocol.

What arrives is received into one buffer per connection and parsed there by
httptools (llhttp, the parser uvicorn uses): the body's chunks are its only
copies. Reading waits while more than READ_BYTES of body is yet to be taken.

On a plain-HTTP connection (no TLS: a model server on loopback, a company
proxy) a chunked answer's head is parsed to its exact end and reading stops
there: what came with the head is kept raw (`Parsed.raw`), not parsed, so that
the rest of the body may be moved to the session by the kernel as the upstream
framed it (splicing.py), its copy read by chunk_framing.py. Over TLS the bytes must be read to be
decrypted.
"""

from __future__ import annotations

import asyncio
import mmap
import re
from dataclasses import dataclass, field

import httptools

# A receive's most, and the most body waiting to be taken: a 10 MB answer in ~10
# reads, not ~40 (each a wake-up, a parse and a write down: the gateway's CPU per
# such answer 10.4 to 8.5 ms in bench/gateway.py's interleaved runs).
READ_BYTES = 1 << 20
Headers = list[tuple[bytes, bytes]]
# llhttp takes CRLF line ends only (bare LF is a parse error): the first CRLFCRLF ends a head.
_HEAD_END = re.compile(rb"\r\n\r\n")


class UpstreamError(OSError):
    """The upstream could not be reached, or broke off before its answer's head."""


def _chunked(headers: Headers) -> bool:
    """The answer's body is framed in chunks, and in nothing else."""
    codings = [value for name, value in headers if name.lower() == b"transfer-encoding"]
    return [coding.strip().lower() for coding in codings] == [b"chunked"]


@dataclass
class Parsed:
    """httptools' callbacks: the head, then body chunks as they are parsed."""

    headers: Headers = field(default_factory=list)
    head_done: bool = False
    keep_alive: bool = False
    parser: httptools.HttpResponseParser | None = None
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0  # of `chunks`
    done: bool = False
    begun: int = 0  # messages begun: a second is bytes the upstream sent unasked
    # The body's bytes that came with a spliceable head, as sent: writable, so that the
    # meter's search reads them where they lie (gateway/needle.py).
    raw: bytearray | None = None
    seam: bytes = b""  # the last bytes of a head not yet ended: a CRLFCRLF across reads

    def on_message_begin(self) -> None:
        self.begun += 1

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.head_done = True
        # Asked now: once the message is complete the parser has moved on to the next.
        self.keep_alive = self.parser is not None and self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if self.done:  # a message after the answer: not the answer's
            return
        self.chunks.append(body)
        self.size += len(body)

    def on_message_complete(self) -> None:
        self.done = True


class Stream(asyncio.BufferedProtocol):
    """A connection's protocol: what arrives is received into one buffer and parsed
    there (the body's chunks are the only copies), read no further while more than
    READ_BYTES of body waits to be taken; writes wait while the transport is full."""

    def __init__(self, plain: bool = False) -> None:
        self.plain = plain  # no TLS: a chunked answer's body may be spliced
        # Anonymous memory, not a bytearray (which zeroes every page): a connection that
        # only ever carried small answers holds a page or two of it, not all.
        self._buffer = memoryview(mmap.mmap(-1, READ_BYTES))
        self.transport: asyncio.Transport | None = None
        self.parsed: Parsed | None = None  # the answer being read
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
            data, spliceable = self._buffer[:nbytes], False
            if self.plain and not parsed.head_done:
                data = self._through_head(parsed, parsed.parser, data)
                spliceable = parsed.raw is not None
            parsed.parser.feed_data(data)
        except httptools.HttpParserError as error:
            self.error = error
            self._lost()
            return
        if (spliceable and not parsed.done) or parsed.size > READ_BYTES:
            self._pause()
        self._wake()

    def _through_head(
        self, parsed: Parsed, parser: httptools.HttpResponseParser, data: memoryview
    ) -> memoryview:
        """Feeds `data` through the head's end, if it is in it; returns what is left to feed.
        A chunked answer's body that came with its head is kept raw too, and reading stops:
        the rest may be spliced (`Answer.raw`)."""
        across = (parsed.seam + bytes(data[:3])).find(b"\r\n\r\n")
        found = _HEAD_END.search(data) if across < 0 else None
        end = across + 4 - len(parsed.seam) if across >= 0 else found.end() if found else -1
        if end < 0:
            parsed.seam = (parsed.seam + bytes(data[-3:]))[-3:]
            return data
        parser.feed_data(data[:end])
        if parsed.head_done and parser.get_status_code() >= 200 and _chunked(parsed.headers):
            # Not fed on: the answer reads it with its own framing reader if spliced, else
            # hands it to this parser first (`Answer.body`).
            parsed.raw = bytearray(data[end:])
            return data[:0]
        return data[end:]

    def _pause(self) -> None:
        if not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

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

    def take_buffer(self) -> memoryview:
        """The receive buffer, free while reading is paused: a spliced answer's copy is read
        into it."""
        return self._buffer

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
