"""The spliced answer's own chunked framing reader (gateway/chunk_framing.py) agrees with
httptools (llhttp), which reads every other answer: the same body and the same end for
any chunking of any body, cut into rounds at any offset; and what it accepts of a
framing with a byte changed, llhttp accepts with the same body (it is no laxer)."""

from __future__ import annotations

import itertools

import httptools
import pytest
from ballet.sessions.gateway.chunk_framing import LINE_BOUND, ChunkedBody, FramingError
from hypothesis import given, settings
from hypothesis import strategies as st

HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"


class _Body:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.done = False

    def on_body(self, body: bytes) -> None:
        self.parts.append(body)

    def on_message_complete(self) -> None:
        self.done = True


def by_llhttp(framed: bytes) -> tuple[bytes, bool] | None:
    """The body llhttp reads and whether it ended; None when it refuses the framing."""
    body = _Body()
    try:
        httptools.HttpResponseParser(body).feed_data(HEAD + framed)
    except httptools.HttpParserError:
        return None
    return b"".join(body.parts), body.done


def by_framing(rounds: list[bytes]) -> tuple[bytes, bool, bool] | None:
    """The body read round by round (each a view of a buffer read over after it), whether
    it ended, and in which round; None when refused."""
    framing, parts, ended_early = ChunkedBody(), [], False
    buffer = bytearray(max((len(r) for r in rounds), default=0))
    try:
        for index, piece in enumerate(rounds):
            buffer[: len(piece)] = piece
            parts += [bytes(view) for view in framing.feed(memoryview(buffer)[: len(piece)])]
            ended_early = ended_early or (framing.ended and any(rounds[index + 1 :]))
    except FramingError:
        return None
    return b"".join(parts), framing.ended, ended_early


@st.composite
def framings(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A body and a chunked framing of it: sizes in any case, leading zeros, extensions,
    trailers."""
    chunks = draw(st.lists(st.binary(min_size=1, max_size=300), max_size=8))
    framed = b""
    for chunk in chunks:
        size = b"%x" % len(chunk)
        size = size.upper() if draw(st.booleans()) else size
        size = b"0" * draw(st.integers(0, 3)) + size
        extension = draw(st.sampled_from([b"", b";a", b";name=value", b";x=1;y"]))
        framed += size + extension + b"\r\n" + chunk + b"\r\n"
    trailers = draw(st.sampled_from([b"", b"x-checksum: abc\r\n", b"a: 1\r\nb:\r\n"]))
    return b"".join(chunks), framed + b"0\r\n" + trailers + b"\r\n"


def cut(data: bytes, offsets: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(o % (len(data) + 1) for o in offsets)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=300, deadline=None)
@given(framings(), st.lists(st.integers(0, 10_000), max_size=6))
def test_every_chunking_cut_anywhere_reads_as_llhttp_reads_it(
    framing: tuple[bytes, bytes], offsets: list[int]
) -> None:
    body, framed = framing
    assert by_llhttp(framed) == (body, True)
    assert by_framing(cut(framed, offsets)) == (body, True, False)


def test_each_cut_offset_of_one_framing() -> None:
    framed = b"5;a=b\r\nhello\r\n00A\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\n"
    for at in range(len(framed) + 1):
        for second in range(at, len(framed) + 1):
            rounds = [framed[:at], framed[at:second], framed[second:]]
            assert by_framing(rounds) == (b"hello0123456789", True, False)


@settings(max_examples=500, deadline=None)
@given(framings(), st.integers(0, 10_000), st.integers(0, 255), st.integers(1, 40))
def test_a_framing_with_a_byte_changed_is_read_no_more_laxly_than_llhttp(
    framing: tuple[bytes, bytes], where: int, byte: int, round_size: int
) -> None:
    _, framed = framing
    at = where % len(framed)
    changed = framed[:at] + bytes([byte]) + framed[at + 1 :]
    rounds = [changed[i : i + round_size] for i in range(0, len(changed), round_size)]
    mine = by_framing(rounds)
    if mine is not None and mine[1]:
        assert by_llhttp(changed) == (mine[0], True)


@pytest.mark.parametrize(
    ("framed", "says"),
    [
        (b"g\r\nhello\r\n", "size line"),
        (b"5 \r\nhello\r\n", "size line"),
        (b"5\nhello\r\n", "CRLF"),
        (b"5\r\nhelloXY0\r\n\r\n", "not followed by CRLF"),
        (b"5\r\nhello\n0\r\n\r\n", "CRLF"),
        (b"fffffffffffffffff\r\n", "size line"),
        (b"0\r\nno colon\r\n\r\n", "trailer"),
        (b"0\r\n\n", "CRLF"),
        (b"1" * (LINE_BOUND + 1), "runs past"),
    ],
)
def test_a_broken_framing_is_refused_naming_what_broke(framed: bytes, says: str) -> None:
    assert by_llhttp(framed) is None or by_llhttp(framed) == (b"", False)
    with pytest.raises(FramingError, match=says):
        ChunkedBody().feed(memoryview(framed))


def test_bytes_after_the_end_are_an_overrun_not_the_body() -> None:
    framing = ChunkedBody()
    assert [bytes(v) for v in framing.feed(memoryview(b"2\r\nok\r\n0\r\n\r\nHTTP/1.1"))] == [b"ok"]
    assert framing.ended and framing.overrun


def test_a_chunks_end_cut_between_rounds_is_read_as_strictly() -> None:
    """A CR ending one round and CRLF starting the next are CR CR LF: refused."""
    assert by_llhttp(b"5\r\nhello\r\r\n5\r\nhello\r\n0\r\n\r\n") is None
    assert by_framing([b"5\r\nhello\r", b"\r\n5\r\nhello\r\n0\r\n\r\n"]) is None
    assert by_framing([b"5\r\nhello\r", b"\n5\r\nworld\r\n0\r\n\r\n"]) == (
        b"helloworld",
        True,
        False,
    )
