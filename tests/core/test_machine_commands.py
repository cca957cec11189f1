"""Slash commands through the machine: permissions, refusals, retry, cancel, pause."""

from __future__ import annotations

import pytest
from ballet.core.commands import HELP_TEXT, parse_commands
from ballet.core.config import Policy
from ballet.core.effects import CancelSession, MergePR, PostComment, PostReply, React, StartSession
from ballet.core.events import CommandIssued, PullRequestClosed, ReconcileTick
from ballet.core.machine import COMMANDS, IllegalEvent
from ballet.core.report import Question
from core_kit import Ticket, at, human, make_pipeline


def test_a_taken_command_gets_eyes_and_a_refused_one_a_reply() -> None:
    t = Ticket()
    t.command("/ballet signoff require docs")
    assert [e.kind for e in t.effects if e.kind in ("react", "post_reply")] == ["react"]
    t.command("/ballet retry", author="eve", permission="read")
    reply = t.one(PostReply)
    assert reply.body.count("@eve `/ballet retry` refused: it needs write permission") == 1
    assert reply.in_reply_to == t.comment_id and reply.marker.extra == f"{t.comment_id}:retry"
    assert not t.of(React) and not t.of(StartSession)


def test_unknown_verbs_are_answered_with_the_help_text() -> None:
    t = Ticket()
    t.command("/ballet frobnicate")
    body = t.one(PostReply).body
    assert "unknown command `frobnicate`." in body and HELP_TEXT in body


def test_several_commands_in_one_comment_get_replies_of_their_own() -> None:
    t = Ticket()
    replies = []
    for cmd in parse_commands("/ballet status\n/ballet help\n/ballet nope"):
        t.feed(
            CommandIssued(
                now=t.now(), command=cmd, author="alice", permission="write", comment_id=55
            )
        )
        replies.append(t.one(PostReply).marker.render())
    assert replies == [
        "octo/app#7:reply:implement:1:1:55:status",
        "octo/app#7:reply:implement:1:1:55:help",
        "octo/app#7:reply:implement:1:1:55:error",
    ]


def test_help_and_status_for_anyone_in_any_status() -> None:
    t = Ticket()
    t.command("/ballet cancel")
    t.command("/ballet help", permission="none")
    assert HELP_TEXT in t.one(PostReply).body
    t.command("/ballet status", permission="read")
    assert "Status: 🚫 cancelled" in t.one(PostReply).body


# A line for each verb that takes words; any other verb is `/ballet <verb>`.
BOT_LINES = {
    "reject": "/ballet reject not like this",
    "answer": "/ballet answer round half up",
    "signoff_require": "/ballet signoff require security",
    "signoff_waive": "/ballet signoff waive security",
    "policy": "/ballet policy merge=manual",
    "budget": "/ballet budget +5",
}


def test_a_bot_gives_no_command_of_any_verb_and_is_told_why() -> None:
    t = Ticket()
    t.finish("weird")  # no route for it: a question, which `answer` would settle
    before = t.rec
    assert before.status == "waiting" and before.waiting and before.waiting.kind == "question"
    for verb in COMMANDS:
        line = BOT_LINES.get(verb, f"/ballet {verb}")
        t.command(line, author="acme-ci[bot]", permission="admin", bot=True)
        reply = t.one(PostReply)
        assert f"@acme-ci[bot] `/ballet {verb.replace('_', ' ')}` refused:" in reply.body
        assert "`acme-ci[bot]` is a bot" in reply.body and "BALLET_TRUSTED_BOTS" in reply.body
        assert not t.of(React) and not t.of(StartSession)
    unchanged = {"version": before.version, "updated_at": before.updated_at}
    assert t.rec.model_copy(update=unchanged) == before
    # The same login read as a person (the operator trusts it): its answer counts.
    t.command(BOT_LINES["answer"], author="acme-ci[bot]", permission="write")
    assert t.of(React) and "round half up" in t.session().answers[-1]


def test_retry_cancels_the_running_session_and_runs_a_new_attempt() -> None:
    t = Ticket()
    old = t.session().job_key
    t.command("/ballet retry")
    assert t.one(CancelSession).job_key == old
    assert t.session().attempt == 2 and t.rec.history[0].outcome == "retried"
    assert t.rec.history[0].end is not None and t.rec.history[1].end is None


def test_retry_closes_an_open_question() -> None:
    t = Ticket()
    t.finish("weird")
    t.command("/ballet retry")
    assert t.rec.questions[-1].answer == "(retried)" and t.session().attempt == 2


def test_retry_reruns_a_failed_ticket_and_a_waiting_wait() -> None:
    from core_kit import agent

    p = make_pipeline((agent("a", next={"failed": "$failed"}),))
    t = Ticket(pipeline=p)
    t.finish("failed")
    t.command("/ballet retry")
    assert t.rec.status == "running" and t.session().attempt == 2
    t2 = Ticket(pipeline=make_pipeline((human("h", next={"approve": "$done"}),), branch=None))
    t2.command("/ballet retry")
    assert t2.rec.waiting and t2.rec.waiting.kind == "approval" and t2.rec.attempt == 2
    assert [r.outcome for r in t2.rec.history] == ["retried", None]


def test_retry_of_a_signoff_session() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("docs",), branch=None))
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    assert t.session().role == "docs"
    t.command("/ballet retry")
    assert t.session().role == "docs" and t.session().attempt == 2


def test_cancel_is_never_gated_and_stops_the_session() -> None:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",)))
    job = t.session().job_key
    t.command("/ballet cancel")
    assert t.rec.status == "cancelled" and t.one(CancelSession).job_key == job
    assert t.rec.history[-1].outcome == "cancelled"
    t.command("/ballet cancel")
    assert "does nothing while the ticket is cancelled" in t.one(PostReply).body
    with pytest.raises(IllegalEvent):
        t.feed(ReconcileTick(now=at(1000)))


def test_pause_and_resume_a_running_stage() -> None:
    t = Ticket()
    job = t.session().job_key
    t.command("/ballet pause")
    assert t.rec.status == "paused" and t.one(CancelSession).job_key == job
    assert not {"ballet:running"} & set(t.rec.model_dump()) and t.rec.open_run is None
    t.command("/ballet resume")
    assert t.rec.status == "running" and t.session().attempt == 2


def test_pause_and_resume_keep_a_question_open() -> None:
    t = Ticket()
    t.finish("weird")
    t.command("/ballet pause")
    assert t.rec.status == "paused" and not t.of(CancelSession)
    t.command("/ballet answer x")
    assert "does nothing while the ticket is paused" in t.one(PostReply).body
    t.command("/ballet resume")
    assert t.rec.status == "waiting" and t.rec.open_question is not None


def test_resume_of_a_forge_wait_checks_again() -> None:
    t = Ticket()
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    t.command("/ballet pause")
    t.command("/ballet resume")
    assert t.one(MergePR) and [r.outcome for r in t.rec.history[-2:]] == ["retried", None]


def test_a_person_closing_a_paused_ticket_decides() -> None:
    t = Ticket()
    t.open_pr()
    t.command("/ballet pause")
    t.feed(PullRequestClosed(now=t.now(), merged=False, by="bob"))
    assert t.rec.status == "cancelled" and t.rec.ended_by == "bob"


def test_policy_switches_the_optional_human_stage_on_and_off() -> None:
    t = Ticket()
    t.command("/ballet policy review=agent+human merge=manual")
    assert "Policy is now review=agent+human merge=manual." in t.one(PostReply).body
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    assert t.rec.waiting and t.rec.waiting.kind == "approval"
    t.command("/ballet policy review=agent")
    assert t.rec.stage == "integrate" and t.rec.waiting and t.rec.waiting.kind == "merge"
    assert t.rec.history[-2].outcome == "skipped"


def test_policy_on_a_non_optional_human_stage_changes_nothing_else() -> None:
    t = Ticket(
        pipeline=make_pipeline(
            (human("h", next={"approve": "$done"}),),
            branch=None,
            policy=Policy(review="agent+human"),
        )
    )
    t.command("/ballet policy review=agent")
    assert t.rec.waiting and t.rec.waiting.kind == "approval" and t.rec.policy.review == "agent"


def test_answer_without_an_open_question_is_refused() -> None:
    t = Ticket(pipeline=make_pipeline((human("h", next={"approve": "$done"}),), branch=None))
    t.command("/ballet answer hello")
    assert "no question is open" in t.one(PostReply).body


def test_questions_go_to_the_writer_who_started_the_ticket_not_a_stranger_author() -> None:
    # A stranger filed the issue and a writer labelled it: only the writer can answer.
    t = Ticket(author="mallory", requested_by="carol")
    t.finish("done", report_fields={"questions": (Question(text="Which API?", blocking=True),)})
    assert t.rec.waiting is not None and t.rec.waiting.who == ("carol",)
    asked = [c for c in t.of(PostComment) if "needs an answer" in c.body]
    assert asked and "\n@carol Ballet needs an answer" in asked[-1].body
    assert "@mallory" not in asked[-1].body
