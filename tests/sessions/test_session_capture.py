from __future__ import annotations

from ballet.sessions.capture import BoundedCapture, LineSplitter


def test_capture_keeps_head_and_tail_and_counts_the_rest() -> None:
    capture = BoundedCapture(head_bytes=4, tail_bytes=6)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qr"):
        capture.feed(chunk)
    assert capture.total_bytes == 18
    assert capture.kept_bytes == 10
    assert capture.dropped_bytes == 8
    text = capture.text()
    assert text.startswith("abcd")
    assert text.endswith("mnopqr")
    assert "8 bytes not kept" in text


def test_capture_without_overflow_is_the_output_itself() -> None:
    capture = BoundedCapture(head_bytes=4, tail_bytes=6)
    capture.feed(b"abcdef")
    assert capture.text() == "abcdef"
    assert capture.tail_text(3) == "def"


def test_lines_split_across_chunks_and_overlong_lines_are_skipped() -> None:
    lines: list[bytes] = []
    splitter = LineSplitter(lines.append, max_line=8)
    for chunk in (b'{"a":', b"1}\nxxxxxx", b"xxxxxxxx\nshort\nend"):
        splitter.feed(chunk)
    splitter.close()
    assert lines == [b'{"a":1}', b"short", b"end"]
