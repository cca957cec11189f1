"""The meter's libc search (gateway/needle.py) finds the needle exactly where sre's finds
it, in bytes and in views of a buffer where it lies (writable, as a spliced answer's
copy, or read-only): at a piece's very end, cut off by `end`, beyond a NUL inside the
piece; and it leaves the buffer as it found it."""

from __future__ import annotations

import mmap

from ballet.core.sse_events import NEEDLE, find_needle
from ballet.sessions.gateway.needle import FIND_USAGE, SMALL
from hypothesis import given, settings
from hypothesis import strategies as st

FRAGMENTS = [NEEDLE, NEEDLE[:-1], NEEDLE[1:], b"\0", b'"', b"u"]


@st.composite
def pieces(draw: st.DrawFn) -> tuple[bytes, int]:
    """A piece of at least SMALL bytes with needles, parts of needles and NULs put in it
    anywhere (its end too), and how far into it to search."""
    size = draw(st.integers(SMALL, 3 * SMALL))
    piece = bytearray(b"x" * size)
    for _ in range(draw(st.integers(0, 4))):
        fragment = draw(st.sampled_from(FRAGMENTS))
        at = draw(st.sampled_from([0, size - len(fragment), draw(st.integers(0, size - 1))]))
        piece[at : at + len(fragment)] = fragment
    end = draw(st.sampled_from([size, size - 1, size - len(NEEDLE), draw(st.integers(0, size))]))
    return bytes(piece[:size]), max(end, 0)


@settings(max_examples=400, deadline=None)
@given(pieces(), st.integers(0, 64))
def test_the_search_finds_what_sres_finds_wherever_the_piece_lies(
    case: tuple[bytes, int], offset: int
) -> None:
    piece, end = case
    expected = find_needle(piece, end)
    assert FIND_USAGE(piece, end) is expected
    mapped = memoryview(mmap.mmap(-1, offset + len(piece) + 64))
    mapped[:] = b"usage" * (len(mapped) // 5) + b"u" * (len(mapped) % 5)  # needles around it
    view = mapped[offset : offset + len(piece)]
    view[:] = piece
    before = bytes(mapped)
    assert FIND_USAGE(view, end) is expected  # writable, searched where it lies
    assert FIND_USAGE(view[:end], end) is expected
    assert bytes(mapped) == before
    assert FIND_USAGE(memoryview(piece), end) is expected  # read-only


def test_a_needle_ending_on_the_pieces_last_byte_is_found() -> None:
    buffer = memoryview(bytearray(b"x" * (2 * SMALL)))
    buffer[-len(NEEDLE) :] = NEEDLE
    assert FIND_USAGE(buffer, len(buffer))
    assert not FIND_USAGE(buffer, len(buffer) - 1)
    assert bytes(buffer[-len(NEEDLE) :]) == NEEDLE
