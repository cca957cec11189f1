"""Passing a chunked answer down as the upstream framed it, its bytes moved by the kernel.

On a plain-HTTP upstream (receiving.py stops reading at a chunked answer's
head) the body goes from the upstream's socket into a pipe with splice(2); tee(2)
puts a second reference to the same pages in another pipe (pipes.py); the
first pipe is spliced to the session's socket, the second is read into the
connection's buffer and its framing read there (chunk_framing.py: where the
answer ends), the body's data handed to the meter as views of the buffer. No
byte is copied into the gateway and out again, nor out of the buffer
(docs/performance.md has what it saves). A copy is parsed before its bytes go
down, so what went down was metered.

Memory stays bounded: a round moves at most PIPE_BYTES, and the next is not
taken from the upstream until the session's socket has taken this one (a
session that reads slowly holds its upstream back, as TCP does). A session
that hangs up is charged all the same: the rest is read from the first pipe,
parsed and dropped.
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable

from ballet.sessions.gateway.metering import AnswerMeter
from ballet.sessions.gateway.needle import FIND_USAGE, SMALL
from ballet.sessions.gateway.pipes import AVAILABLE, PIPE_BYTES, PipePair, PipePool, tee
from ballet.sessions.gateway.upstream import Answer

_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)
# A round that moved this much found the upstream ahead of the gateway: the next is spliced.
BULK_BYTES = 64 << 10


def sink_of(answer: Answer, writer: asyncio.StreamWriter) -> int | None:
    """The session's socket, if the answer may be spliced down to it: plain on both sides,
    and nothing of the transport's own waiting to go first."""
    sock = writer.get_extra_info("socket")
    if not AVAILABLE or answer.raw is None or answer.ended or sock is None:
        return None  # (an answer that came whole with its head is written as it is)
    if writer.transport.is_closing():
        return None
    if writer.get_extra_info("sslcontext") is not None or writer.transport.get_write_buffer_size():
        return None
    return int(sock.fileno())


async def splice_answer(
    answer: Answer, sink: int, head: list[bytes], meter: AnswerMeter | None
) -> tuple[bool, bool]:
    """`head` (the answer's, as the gateway wrote it), then the body as the upstream framed
    it, each piece metered before it goes down. (whole: the session was sent one whole
    answer and no more; hung up): an unmetered answer the session hung up on is not read on."""
    assert answer.raw is not None
    source, buffer, pipes = answer.source()
    splice = Splice(source, sink, buffer, pipes)

    def metered(chunks: list[memoryview], copy: memoryview) -> None:
        if meter is not None:
            # One search of the round's whole copy, not one per chunk: the chunks lie in it.
            absent = len(copy) >= SMALL and not FIND_USAGE(copy, len(copy))
            for chunk in chunks:
                meter.feed(chunk, absent)

    def read(copy: memoryview) -> bool:
        metered(answer.feed(copy), copy)
        return answer.ended or (splice.hung_up and meter is None)

    try:
        nothing = memoryview(b"")
        metered(answer.feed(nothing), nothing)  # what came with the head
        whole = await splice.run([*head, answer.raw], read) and answer.ended
    finally:
        splice.close()
    return whole and answer.spliced(), splice.hung_up


class Splice:
    """One answer's body, upstream socket to session socket; `read` parses each copy.

    Round by round: a round that found the upstream ahead (BULK_BYTES or more waiting)
    makes the next one spliced; a smaller one, the next read and written, as a stream
    that trickles an event at a time costs fewer system calls so (one read, one write).
    Either way the bytes go down as they came, so the rounds may take turns."""

    def __init__(self, source: int, sink: int, buffer: memoryview, pipes: PipePool) -> None:
        # Duplicates: asyncio lets no one else watch a transport's own descriptor, and a
        # session that hangs up closes its transport's while this one is still in use.
        self._source, self._sink = os.dup(source), os.dup(sink)
        self._buffer = buffer
        self._pool = pipes
        self._pair: PipePair | None = None
        self._mid_round = False  # the pipes may hold bytes: they serve no other answer
        self._loop = asyncio.get_running_loop()
        self._readable: asyncio.Future[None] | None = None
        self._watching = False  # the source stays watched while rounds wait for it
        self.hung_up = False  # the session's socket took no more: the rest is read, dropped

    async def run(self, head: list[bytes | bytearray], read: Callable[[memoryview], bool]) -> bool:
        """`head` down first, then the body until `read`, given each copy, says the answer
        ended; False when the upstream closed the connection before that."""
        await self._write(b"".join(head))  # first: a stream's first event waits for nothing
        # The head's read took what had come (up to READ_BYTES): wait before reading again.
        bulk, drained = False, True
        while True:
            if drained:
                await self._source_ready()
            try:
                moved, ended = await (self._spliced(read) if bulk else self._copied(read))
            except BlockingIOError:
                drained = True
                continue
            if ended or not moved:  # not moved: the upstream closed the connection
                return ended
            drained = moved < (PIPE_BYTES if bulk else len(self._buffer))
            bulk = moved >= BULK_BYTES

    def close(self) -> None:
        if self._watching:
            self._loop.remove_reader(self._source)
        os.close(self._source)
        os.close(self._sink)
        if self._pair is not None:
            self._pair.close() if self._mid_round else self._pool.give(self._pair)
        self._pair = None

    async def _copied(self, read: Callable[[memoryview], bool]) -> tuple[int, bool]:
        got = os.readv(self._source, [self._buffer])
        ended = read(self._buffer[:got]) if got else False
        await self._write(self._buffer[:got])
        return got, ended

    async def _spliced(self, read: Callable[[memoryview], bool]) -> tuple[int, bool]:
        pair = self._pair = self._pair or self._pool.take()
        held = os.splice(self._source, pair.into, PIPE_BYTES, flags=os.SPLICE_F_NONBLOCK)
        moved, ended, self._mid_round = held, False, True
        while held:  # tee copies the pipe's first bytes: each part taken once teed
            part = held if self.hung_up else tee(pair.out, pair.copy_in, held)
            got = _read(pair.out if self.hung_up else pair.copy_out, self._buffer[:part])
            ended = read(self._buffer[:got])
            if not self.hung_up:
                await self._splice_down(pair.out, part)
            held -= part
        self._mid_round = False
        return moved, ended

    async def _source_ready(self) -> None:
        self._readable = self._loop.create_future()
        if not self._watching:
            self._loop.add_reader(self._source, self._wake)
            self._watching = True
        try:
            await self._readable
        finally:
            self._readable = None

    def _wake(self) -> None:
        if self._readable is None:  # not waited for (the session's socket is): unwatched,
            self._loop.remove_reader(self._source)  # or the loop would spin on it
            self._watching = False
        elif not self._readable.done():
            self._readable.set_result(None)

    async def _splice_down(self, out: int, size: int) -> None:
        while size:
            try:
                size -= os.splice(out, self._sink, size, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                await _writable(self._loop, self._sink)
            except OSError as error:
                if error.errno not in _GONE:
                    raise
                self.hung_up = True
                _read(out, self._buffer[:size])  # parsed already: dropped
                return

    async def _write(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view and not self.hung_up:
            try:
                view = view[os.write(self._sink, view) :]
            except BlockingIOError:
                await _writable(self._loop, self._sink)
            except OSError as error:
                if error.errno not in _GONE:
                    raise
                self.hung_up = True


def _read(fd: int, into: memoryview) -> int:
    """All of `into` from a pipe that holds at least that much."""
    got = 0
    while got < len(into):
        got += os.readv(fd, [into[got:]])
    return got


async def _writable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(fd, wake)
    try:
        await ready
    finally:
        loop.remove_writer(fd)
