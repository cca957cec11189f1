"""Slash-command parsing: lines, quoting, fences, and errors as values."""

from __future__ import annotations

import pytest
from ballet.core.commands import Command, CommandError, parse_commands
from hypothesis import given, settings
from hypothesis import strategies as st


def one(body: str) -> Command | CommandError:
    (parsed,) = parse_commands(body)
    return parsed


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("/ballet retry", Command(verb="retry")),
        ("  /ballet cancel  ", Command(verb="cancel")),
        ("/ballet pause", Command(verb="pause")),
        ("/ballet resume", Command(verb="resume")),
        ("/ballet status", Command(verb="status")),
        ("/ballet help", Command(verb="help")),
        ("/ballet approve", Command(verb="approve")),
        ("/ballet approve looks good", Command(verb="approve", text="looks good")),
        ("/ballet approve abc1234", Command(verb="approve", sha="abc1234")),
        ("/ballet approve abc1234 ship it", Command(verb="approve", sha="abc1234", text="ship it")),
        ("/ballet reject tests are missing", Command(verb="reject", text="tests are missing")),
        ("/ballet answer use the v2 API", Command(verb="answer", text="use the v2 API")),
        ("/ballet signoff require security", Command(verb="signoff_require", role="security")),
        ("/ballet signoff waive docs", Command(verb="signoff_waive", role="docs")),
        ("/ballet policy review=agent+human", Command(verb="policy", review="agent+human")),
        ("/ballet policy merge=manual", Command(verb="policy", merge="manual")),
        (
            "/ballet policy review=agent merge=auto",
            Command(verb="policy", review="agent", merge="auto"),
        ),
    ],
)
def test_verbs_parse(line: str, expected: Command) -> None:
    assert one(line) == expected


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("/ballet", "needs a verb"),
        ("/ballet frobnicate", "unknown command `frobnicate`"),
        ("/ballet reject", "needs a reason"),
        ("/ballet answer", "needs your answer"),
        ("/ballet signoff", "bad sign-off command"),
        ("/ballet signoff approve security", "bad sign-off command"),
        ("/ballet signoff require Security!", "not a role name"),
        ("/ballet policy", "needs a setting"),
        ("/ballet policy review=humans", "`review=humans` is not a policy setting"),
        ("/ballet policy merge=yolo", "`merge=yolo` is not a policy setting"),
    ],
)
def test_bad_lines_are_errors_with_advice(line: str, says: str) -> None:
    parsed = one(line)
    assert isinstance(parsed, CommandError)
    assert says in parsed.message
    assert parsed.line == line.strip()


def test_several_commands_per_comment_in_order() -> None:
    body = "Thanks!\n/ballet signoff require security\nand then\n/ballet retry\n"
    assert parse_commands(body) == (
        Command(verb="signoff_require", role="security"),
        Command(verb="retry"),
    )


def test_quotes_fences_and_mid_line_mentions_are_ignored() -> None:
    body = "\n".join(
        [
            "> /ballet cancel",
            "  > /ballet cancel",
            "```",
            "/ballet cancel",
            "~~~",  # a different fence inside does not close it
            "/ballet cancel",
            "```",
            "~~~python",
            "/ballet cancel",
            "~~~",
            "please run /ballet cancel",
            "    /ballet cancel",  # four spaces: an indented code block
            "/balletretry",
            "/ballet status",
        ]
    )
    assert parse_commands(body) == (Command(verb="status"),)


def test_an_unclosed_fence_hides_the_rest() -> None:
    assert parse_commands("```\n/ballet cancel") == ()


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_comment_parses_without_raising(body: str) -> None:
    for parsed in parse_commands("/ballet " + body):
        assert isinstance(parsed, Command | CommandError)
        if isinstance(parsed, CommandError):
            assert parsed.message
