"""The meter's search of a streamed answer for `usage`, by libc's memmem.

Every byte of a streamed answer is searched for the needle (core/sse_events.py):
for a stream of text deltas it is most of what metering costs. sre's literal
search runs about a byte a cycle (2.7-3.5 GB/s here), `bytes.find` slower;
glibc's memmem, called through ctypes, 5.7-6.4 GB/s on the bench's text and on
prose (docs/performance.md). A foreign call costs ~0.7 µs against sre's 0.4 on
a 1 KB event, so pieces under SMALL keep sre's search; where libc has no
memmem, every piece does.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from ballet.core.sse_events import NEEDLE, Find, find_needle

SMALL = 4096


def _memmem() -> Callable[..., int | None] | None:
    try:
        memmem = ctypes.CDLL(None).memmem
    except (AttributeError, OSError):
        return None
    memmem.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    memmem.restype = ctypes.c_void_p
    return memmem


_MEMMEM = _memmem()


def _find_by_memmem(data: bytes, end: int) -> bool:
    if end < SMALL or type(data) is not bytes:  # c_char_p takes bytes, as they are
        return find_needle(data, end)
    assert _MEMMEM is not None
    return _MEMMEM(data, end, NEEDLE, len(NEEDLE)) is not None


FIND_USAGE: Find = find_needle if _MEMMEM is None else _find_by_memmem
