"""Passing a chunked answer down as the upstream framed it, its bytes moved by the kernel.

On a plain-HTTP upstream (receiving.py stops reading at a chunked answer's
head) the body goes from the upstream's socket into a pipe with splice(2); tee(2)
puts a second reference to the same pages in another pipe; the first pipe is
spliced to the session's socket, the second is read into the connection's
buffer and parsed (the chunks' framing, for where the answer ends; the body,
for the meter). No byte is copied into the gateway and out again: the bench's
10 MB answer cost the gateway ~9.5 ms of CPU read and written, ~2 ms spliced
with the copy read (docs/performance.md). A copy is parsed before its bytes go
down, so what went down was metered.

Memory stays bounded: a round moves at most PIPE_BYTES, and the next is not
taken from the upstream until the session's socket has taken this one (a
session that reads slowly holds its upstream back, as TCP does). A session
that hangs up is charged all the same: the rest is read from the first pipe,
parsed and dropped. Python has no os.tee: it is libc's, through ctypes; where
it or splice is missing the answer goes the way that reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import fcntl
import os
from collections.abc import Callable

from ballet.sessions.gateway.metering import AnswerMeter
from ballet.sessions.gateway.upstream import Answer

PIPE_BYTES = 1 << 20  # Linux's unprivileged most (/proc/sys/fs/pipe-max-size)
_F_SETPIPE_SZ = 1031  # fcntl's: Python 3.11 names it only on some builds
_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)


def _libc_tee() -> Callable[[int, int, int, int], int] | None:
    try:
        tee = ctypes.CDLL(None, use_errno=True).tee
    except (AttributeError, OSError):
        return None
    tee.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
    tee.restype = ctypes.c_ssize_t
    return tee


_TEE = _libc_tee()
AVAILABLE = _TEE is not None and hasattr(os, "splice")


def _tee(source: int, sink: int, size: int) -> int:
    assert _TEE is not None
    moved = _TEE(source, sink, size, os.SPLICE_F_NONBLOCK)
    if moved < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"tee: {os.strerror(code)}")
    return moved


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
    source, buffer = answer.source()
    splice = Splice(source, sink, buffer)

    def metered(chunks: list[bytes]) -> None:
        if meter is not None:
            for chunk in chunks:
                meter.feed(chunk)

    def read(copy: memoryview) -> bool:
        metered(answer.feed(copy))
        return answer.ended or (splice.hung_up and meter is None)

    try:
        metered(answer.feed(memoryview(b"")))  # what came with the head, parsed already
        whole = await splice.run([*head, answer.raw], read) and answer.ended
    finally:
        splice.close()
    return whole and answer.spliced(), splice.hung_up


class Splice:
    """One answer's body, upstream socket to session socket; `read` parses each copy."""

    def __init__(self, source: int, sink: int, buffer: memoryview) -> None:
        # Duplicates: asyncio lets no one else watch a transport's own descriptor, and a
        # session that hangs up closes its transport's while this one is still in use.
        self._source, self._sink = os.dup(source), os.dup(sink)
        self._buffer = buffer
        self._pipes: list[int] = []
        self.hung_up = False  # the session's socket took no more: the rest is read, dropped

    async def run(self, head: list[bytes], read: Callable[[memoryview], bool]) -> bool:
        """`head` down first, then the body until `read`, given each copy, says the answer
        ended; False when the upstream closed the connection before that."""
        loop = asyncio.get_running_loop()
        into, out = self._pipe()
        copy_in, copy_out = self._pipe()
        await self._write(loop, b"".join(head))
        while True:
            try:
                held = os.splice(self._source, into, PIPE_BYTES, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                await _ready(loop, self._source, loop.add_reader, loop.remove_reader)
                continue
            if not held:
                return False
            ended = False
            while held:  # tee copies the pipe's first bytes: each part taken once teed
                part = held if self.hung_up else _tee(out, copy_in, held)
                got = _read(out if self.hung_up else copy_out, self._buffer[:part])
                ended = read(self._buffer[:got])
                if not self.hung_up:
                    await self._splice_down(loop, out, part)
                held -= part
            if ended:
                return True

    def close(self) -> None:
        for fd in (self._source, self._sink, *self._pipes):
            os.close(fd)
        self._pipes = []

    def _pipe(self) -> tuple[int, int]:
        out, into = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._pipes += [out, into]
        with contextlib.suppress(OSError):  # past the user's pipe quota: the default, smaller
            fcntl.fcntl(into, _F_SETPIPE_SZ, PIPE_BYTES)
        return into, out

    async def _splice_down(self, loop: asyncio.AbstractEventLoop, out: int, size: int) -> None:
        while size:
            try:
                size -= os.splice(out, self._sink, size, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                await _ready(loop, self._sink, loop.add_writer, loop.remove_writer)
            except OSError as error:
                if error.errno not in _GONE:
                    raise
                self.hung_up = True
                _read(out, self._buffer[:size])  # parsed already: dropped
                return

    async def _write(self, loop: asyncio.AbstractEventLoop, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.hung_up:
            try:
                view = view[os.write(self._sink, view) :]
            except BlockingIOError:
                await _ready(loop, self._sink, loop.add_writer, loop.remove_writer)
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


async def _ready(
    loop: asyncio.AbstractEventLoop,
    fd: int,
    watch: Callable[..., None],
    unwatch: Callable[[int], object],
) -> None:
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    watch(fd, wake)
    try:
        await ready
    finally:
        unwatch(fd)
