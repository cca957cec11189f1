"""A command from Ballet's web pages: no comment, so nothing is reacted to or replied on."""

from __future__ import annotations

from ballet.core.commands import Command, parse_commands
from ballet.core.effects import CancelSession, PostReply, React
from ballet.core.events import CommandIssued
from core_kit import Ticket


def web(t: Ticket, verb: str, permission: str = "write") -> None:
    (cmd,) = parse_commands(f"/ballet {verb}")
    assert isinstance(cmd, Command)
    t.feed(
        CommandIssued(
            now=t.now(), command=cmd, author="alice", permission=permission, comment_id=None
        )
    )


def test_a_web_cancel_acts_as_the_comment_would_without_a_reaction() -> None:
    t = Ticket()
    running = t.session().job_key
    web(t, "cancel")
    assert t.rec.status == "cancelled"
    assert t.one(CancelSession).job_key == running
    assert not t.of(React) and not t.of(PostReply)


def test_a_refused_web_command_changes_nothing_and_replies_nowhere() -> None:
    t = Ticket()
    web(t, "pause", permission="read")
    assert t.rec.status == "running"
    assert not t.of(React) and not t.of(PostReply)
    web(t, "status")  # a verb that only replies: no comment, so no reply either
    assert not t.of(PostReply)
