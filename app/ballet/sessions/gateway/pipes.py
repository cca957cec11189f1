"""The pipes spliced answers pass through, kept per worker, and tee(2).

A spliced answer (splicing.py) needs two pipes: one its bytes go through, one
for the copy tee puts beside them. Made per answer they cost ten system calls
(pipe2, the 1 MiB size, close) on every streamed answer, small ones too; a
pair left empty by an answer that ended is kept for the next (IDLE_PAIRS at
most), one left holding bytes (an error, a cancelled answer) is closed. An
empty pipe holds no pages. Python has no os.tee: it is libc's, through ctypes;
where it or splice is missing, nothing is spliced.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass

PIPE_BYTES = 1 << 20  # Linux's unprivileged most (/proc/sys/fs/pipe-max-size)
IDLE_PAIRS = 32
_F_SETPIPE_SZ = 1031  # fcntl's: Python 3.11 names it only on some builds


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


def tee(source: int, sink: int, size: int) -> int:
    """Up to `size` of the bytes at the head of pipe `source` put in pipe `sink` too."""
    assert _TEE is not None
    moved = _TEE(source, sink, size, os.SPLICE_F_NONBLOCK)
    if moved <= 0:  # 0: `source` empty, which a caller that knows what it holds never asks
        code = ctypes.get_errno() if moved else 0
        raise OSError(code, f"tee: {os.strerror(code) if code else 'nothing to copy'}")
    return moved


@dataclass(frozen=True)
class PipePair:
    into: int  # the bytes' pipe, written end
    out: int
    copy_in: int  # the copy's pipe
    copy_out: int

    def close(self) -> None:
        for fd in (self.into, self.out, self.copy_in, self.copy_out):
            os.close(fd)


class PipePool:
    def __init__(self) -> None:
        self._idle: list[PipePair] = []
        self._closed = False  # the worker's gateway closed: a pair given back is closed

    def take(self) -> PipePair:
        if self._idle:
            return self._idle.pop()
        into, out = _pipe()
        try:
            copy_in, copy_out = _pipe()
        except OSError:
            os.close(into)
            os.close(out)
            raise
        return PipePair(into, out, copy_in, copy_out)

    def give(self, pair: PipePair) -> None:
        """A pair both of whose pipes are empty."""
        if not self._closed and len(self._idle) < IDLE_PAIRS:
            self._idle.append(pair)
        else:
            pair.close()

    def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for pair in idle:
            pair.close()


def _pipe() -> tuple[int, int]:
    out, into = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    with contextlib.suppress(OSError):  # past the user's pipe quota: the default, smaller
        fcntl.fcntl(into, _F_SETPIPE_SZ, PIPE_BYTES)
    return into, out
