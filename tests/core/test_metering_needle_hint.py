"""A caller that searched a span holding a piece and found no needle says so
(`needle_absent`, as the gateway does for a spliced round's copy): the piece is not
searched again, and the answer meters the same however it is cut, the needle split
across pieces included; views of a buffer read over after each piece meter the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ballet.core.metering import UsageReader
from ballet.core.sse_events import NEEDLE, Piece, SseEvents, find_needle

ANSWERS = Path(__file__).resolve().parents[1] / "fixtures" / "model-answers"
EXPECTED: dict[str, dict[str, Any]] = json.loads((ANSWERS / "expected.json").read_text())
STREAMS = sorted(n for n in EXPECTED if n.endswith(".sse"))


def metered_with_hints(case: dict[str, Any], pieces: list[bytes]) -> tuple[Any, int]:
    """The usage metered with each needle-free piece marked so, fed as a view of one
    buffer written over for each; and how often a marked piece was searched all the same."""
    searched_marked = 0
    marked = False

    def find(data: Piece, end: int) -> bool:
        nonlocal searched_marked
        searched_marked += marked
        return find_needle(data, end)

    reader = UsageReader(case["api"], case["content_type"], find=find)
    buffer = bytearray(max(len(p) for p in pieces))
    for piece in pieces:
        buffer[: len(piece)] = piece
        marked = NEEDLE not in piece
        reader.feed(memoryview(buffer)[: len(piece)], needle_absent=marked)
        buffer[: len(piece)] = b"\0" * len(piece)  # what the meter kept, it copied
    assert not reader.unreadable
    usage = reader.result()
    return (None if usage is None else usage.model_dump()), searched_marked


@pytest.mark.parametrize("name", STREAMS)
def test_marked_pieces_meter_the_same_cut_anywhere_and_are_not_searched(name: str) -> None:
    case, body = EXPECTED[name], (ANSWERS / name).read_bytes()
    for cut in range(1, len(body), max(1, len(body) // 300)):
        for size in (7, 64):  # pieces of 7 bytes split every needle somewhere
            pieces = [body[:cut]] + [body[i : i + size] for i in range(cut, len(body), size)]
            assert metered_with_hints(case, pieces) == (case["usage"], 0), (cut, size)


def test_views_cut_anywhere_find_the_events_bytes_find() -> None:
    """Events about as long as the tail a piece's last blank line is first looked for in
    (4 KiB), cut so that a blank line falls on either side of it, read from views."""
    events = [
        b'data: {"usage": {"output_tokens": %d}, "text": "%s"}\n\n' % (n, b"x" * (4040 + n))
        for n in range(0, 80, 7)
    ]
    stream = b"".join(events)
    paths = [("usage",)]
    whole = SseEvents(paths).feed(stream)
    assert [p[("usage",)] for p in whole] == [{"output_tokens": n} for n in range(0, 80, 7)]
    for size in (4095, 4096, 4097, 4100, 9000):
        for first in range(0, 200, 13):
            events_read, buffer = SseEvents(paths), bytearray(max(size, first))
            found = []
            for piece in [stream[:first]] + [
                stream[i : i + size] for i in range(first, len(stream), size)
            ]:
                buffer[: len(piece)] = piece
                found += events_read.feed(memoryview(buffer)[: len(piece)])
            assert found == whole, (size, first)
