"""A refused command says why and what to do instead, so no one is left guessing."""

from __future__ import annotations

from ballet.core.config import Policy
from ballet.core.effects import PostReply
from core_kit import Ticket, make_pipeline


def waiting_for_approval(**kw: object) -> Ticket:
    t = Ticket(pipeline=make_pipeline(policy=Policy(review="agent+human"), **kw))
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass", sha="aaa1111")
    return t


def test_a_command_at_the_wrong_time_points_at_status() -> None:
    t = Ticket()
    t.command("/ballet approve")
    assert t.one(PostReply).body.endswith(
        "`/ballet status` shows where it stands and which command acts on it."
    )


def test_a_person_without_the_right_points_at_who_has_it() -> None:
    t = waiting_for_approval(approvers=("Bob",))
    t.command("/ballet approve", author="carol")
    assert "only the pipeline's approvers may (Bob); ask one of them." in t.one(PostReply).body
    t.command("/ballet approve", author="bob", bot=True)
    assert (
        "`bob` is a bot, and only people steer Ballet; ask a person to give it,"
        " or Ballet's operator to list this bot in BALLET_TRUSTED_BOTS."
    ) in t.one(PostReply).body


def test_missing_write_permission_points_at_someone_with_write_access() -> None:
    t = waiting_for_approval()
    t.command("/ballet approve", author="dave", permission="read")
    assert "(you have read); ask someone with write access to give it." in t.one(PostReply).body
