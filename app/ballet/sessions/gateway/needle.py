"""The meter's search of a streamed answer for `usage`, by libc's strstr and memmem.

Every byte of a streamed answer is searched for the needle (core/sse_events.py):
for a stream of text deltas it is most of what metering costs. sre's literal
search runs about a byte a cycle (2.7-3.5 GB/s here), `bytes.find` slower;
glibc's memmem 5.2-6.5 GB/s, its strstr (SSE2, two bytes at a time) 35-41 GB/s
on the bench's text and on prose, both called through ctypes
(docs/performance.md). A foreign call costs ~0.7 µs against sre's 0.4 on a 1 KB
event, so pieces under SMALL keep sre's search; where libc has neither, every
piece does.

strstr stops at a NUL. A bytes object has one past its end (CPython's own);
a writable view (a spliced answer's copy, in the connection's buffer) is given
one for the call: its last byte is set to NUL and put back, the needle ending
on that byte is compared apart, and a NUL inside the piece (no JSON string holds
one raw) sends the piece to memmem. Read-only views and bytes searched short of
their end go to memmem.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from ballet.core.sse_events import NEEDLE, Find, Piece, find_needle

SMALL = 4096
_Search = Callable[..., int | None]


def _libc(name: str, *argtypes: type) -> _Search | None:
    try:
        function = ctypes.CDLL(None)[name]
    except (AttributeError, OSError):
        return None
    function.argtypes = list(argtypes)
    function.restype = ctypes.c_void_p
    return function


_V, _N = ctypes.c_void_p, ctypes.c_size_t
_MEMMEM = _libc("memmem", _V, _N, ctypes.c_char_p, _N)
_STRSTR = _libc("strstr", _V, ctypes.c_char_p)
_MEMCHR = _libc("memchr", _V, ctypes.c_int, _N)


def _find_by_memmem(data: Piece, end: int) -> bool:
    if end < SMALL:
        return find_needle(data, end)
    assert _MEMMEM is not None
    if type(data) is bytes:  # c_void_p takes bytes as they are
        return _MEMMEM(data, end, NEEDLE, len(NEEDLE)) is not None
    try:  # a view of a writable buffer (a spliced answer's copy) is searched where it lies
        where = ctypes.c_char.from_buffer(data)
    except TypeError:  # read-only: ctypes gives no address of it
        return find_needle(data, end)
    return _MEMMEM(ctypes.addressof(where), end, NEEDLE, len(NEEDLE)) is not None


def _find_by_strstr(data: Piece, end: int) -> bool:
    if end < SMALL:
        return find_needle(data, end)
    assert _STRSTR is not None and _MEMCHR is not None
    if type(data) is bytes:
        if end != len(data):
            return _find_by_memmem(data, end)
        if _STRSTR(data, NEEDLE) is not None:
            return True
        return _MEMCHR(data, 0, end) is not None and _find_by_memmem(data, end)
    try:
        address = ctypes.addressof(ctypes.c_char.from_buffer(data))
    except TypeError:
        return _find_by_memmem(data, end)
    assert isinstance(data, memoryview)
    last = data[end - 1]
    data[end - 1] = 0
    try:
        if _STRSTR(address, NEEDLE) is not None:
            return True
        inside = _MEMCHR(address, 0, end - 1) is not None
    finally:
        data[end - 1] = last
    if inside:
        return _find_by_memmem(data, end)
    return data[end - len(NEEDLE) : end] == NEEDLE


FIND_USAGE: Find = (
    find_needle
    if _MEMMEM is None
    else _find_by_memmem
    if _STRSTR is None or _MEMCHR is None
    else _find_by_strstr
)
