"""The end of a session's log as a check run's text: bounded, fenced, whole lines."""

from __future__ import annotations

from ballet.tickets.page_links import TEXT_MAX, fenced, with_ticket_link


def test_a_long_log_keeps_its_end_from_a_line_start_within_githubs_limit() -> None:
    lines = [f"line {i} " + "x" * 50 for i in range(5_000)]
    text = fenced("\n".join(lines))
    assert len(text) < 65_535 and text.count("\n") > 900
    assert "line 4999" in text and "line 0 " not in text
    body = text.split("\n", 3)[3]  # past the note, the blank line and the fence
    assert body.startswith("line ") and len(body) <= TEXT_MAX


def test_no_line_of_the_log_closes_its_fence() -> None:
    log = "before\n```\n````` agent output\nafter"
    text = fenced(log)
    fence = text.splitlines()[0].removesuffix("text")
    assert set(fence) == {"`"} and len(fence) == 6
    assert text.endswith("\n" + fence) and log in text


def test_terminal_controls_in_the_log_are_shown_not_sent_to_github() -> None:
    text = fenced("ok\x1b]52;c;eA==\x07 \x1b[2J\u009b1m\r\nhidden\rshown")
    lines = text.replace("\r\n", "\n")  # a CRLF line end is kept
    assert not any(c in lines for c in "\x1b\x07\u009b\r")
    assert "ok\\x1b]52;c;eA==\\x07 \\x1b[2J\\x9b1m\nhidden\\x0dshown" in lines


def test_the_tracking_comment_links_the_tickets_page_under_its_heading() -> None:
    body = with_ticket_link("### Ballet · octo/app#7\n\n**Status:** running", "http://b/t/7")
    assert body.splitlines()[:3] == [
        "### Ballet · octo/app#7",
        "",
        "[Watch this ticket on Ballet](http://b/t/7)",
    ]
