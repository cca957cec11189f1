"""The ticket state machine: `advance(record, event) -> (record', effects)`.

Like h11's `_state.py`, the behaviour is data first: `TABLE` says, for every
(status, event kind), which handler runs and which statuses it can lead to;
`COMMANDS` says, for every slash-command verb, in which statuses it counts and
who may give it. Guards a table cannot express live in the handlers
(`handlers`, `verbs`), which raise `IllegalEvent` before changing anything.
A pair missing from the table is illegal: `advance` raises `IllegalEvent`, and
the edge logs the event and drops it. A rule's `to` is enforced, not only
documented: a handler that leads anywhere else is a bug, and `advance` raises
`TableViolation` before the record is saved or any effect carried out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

from ballet.core import (
    base_moves,
    budgets,
    check_runs,
    companion_events,
    companion_landing,
    companions,
    crashes,
    edits,
    merge_pins,
    outbox,
    render,
    signoffs,
    steps,
    verbs,
)
from ballet.core import companion_checks as cc
from ballet.core import companion_heads as ch
from ballet.core import companion_queue as cq
from ballet.core import forge_waits as fw
from ballet.core import handlers as h
from ballet.core.commands import HELP_TEXT, Command, CommandError, Verb
from ballet.core.effects import (
    ALL_LABELS,
    AnyEffect,
    Label,
    MergePR,
    React,
    RemoveLabels,
    SetLabels,
    UpsertTrackingComment,
)
from ballet.core.events import WRITE_PERMISSIONS, AnyEvent, CommandIssued
from ballet.core.handlers import IllegalEvent
from ballet.core.record import Record, Status
from ballet.core.tx import Tx

__all__ = ["COMMANDS", "TABLE", "IllegalEvent", "TableViolation", "advance"]

LIVE: tuple[Status, ...] = ("running", "waiting", "paused")
ANY: tuple[Status, ...] = ("running", "waiting", "paused", "done", "failed", "cancelled")
ONWARD: tuple[Status, ...] = ("running", "waiting", "done", "failed")


@dataclass(frozen=True)
class Rule:
    handler: Callable[[Tx, Any], None]
    to: tuple[Status, ...]  # where it can lead besides staying put (advance enforces it)
    says: str


class TableViolation(RuntimeError):
    """A handler led where its rule says it cannot: a bug in the handler or the table."""


# fmt: off
TABLE: dict[tuple[Status | None, str], Rule] = {
    # A labelled issue becomes a ticket: branch and draft PR, then the first stage.
    (None, "ticket_requested"): Rule(h.start, ONWARD, "open branch + draft PR, enter first stage"),
    # A session's report picks the next stage (next phase, sign-off, question...);
    # a session a cost cap stopped (outcome `budget`) raises a question naming the cap
    # and what was spent, whatever its stage's `next` says (core/budgets.py).
    # Its companions' pushed heads are kept first, and a new one's pull request asked for.
    ("running", "session_finished"): Rule(companions.session_finished, ONWARD,
                                          "route the report's outcome"),
    # A session whose worker died runs again as a new attempt; past the retries, a question.
    ("running", "session_crashed"): Rule(crashes.session_crashed, ("running", "waiting"),
                                         "re-run a crashed session, or ask"),
    # A session queued on a pool with no live worker: the ticket keeps running and
    # its tracking comment names the pool, until a worker takes the session (the
    # edge says so) or the stage's timeout asks a person (below).
    ("running", "worker_awaited"): Rule(h.worker_awaited, ("running",),
                                        "note: the session waits for a worker of its pool"),
    ("running", "session_started"): Rule(h.session_started, ("running",),
                                         "a worker of the pool took the session"),
    # The reconciler settles a session past its stage's timeout with a question.
    ("running", "reconcile_tick"): Rule(h.session_timeout, ("waiting",), "session timed out"),
    # ...and a forge wait past its timeout, or checks that never started.
    # (A companion's merge held for its checks is tried again: core/companion_landing.py.)
    ("waiting", "reconcile_tick"): Rule(companion_landing.tick, ("waiting",), "wait timed out"),
    # Platform stages wait for the forge: checks, reviews, merges (a companion's
    # checks, marked with its repository: core/companion_checks.py).
    ("waiting", "checks_started"): Rule(fw.checks_started, ("waiting",), "checks started"),
    ("waiting", "checks_completed"): Rule(cc.checks_completed, ONWARD, "checks decide pass/fail"),
    # Check results for the head are remembered at any time: a checks wait
    # entered after CI finished settles at once instead of waiting forever.
    ("running", "checks_started"): Rule(fw.checks_started, ("running",), "remember checks"),
    ("running", "checks_completed"): Rule(cc.checks_completed, ("running",), "remember checks"),
    ("paused", "checks_started"): Rule(fw.checks_started, ("paused",), "remember checks"),
    ("paused", "checks_completed"): Rule(cc.checks_completed, ("paused",), "remember checks"),
    # A review by a person with write permission: at a review wait it decides (for
    # the head it names); elsewhere one asking for changes sends the ticket back to
    # rework, at once when it waits, when the session or merge ends otherwise, and
    # one approving the head is kept: a landing waiting for people lands on it.
    ("waiting", "review_submitted"): Rule(companion_events.review_submitted, ONWARD,
                                          "a review decides, lands, or asks for rework"),
    ("running", "review_submitted"): Rule(companion_events.review_submitted, ("running",),
                                          "changes asked: rework once the session ends"),
    ("paused", "review_submitted"): Rule(companion_events.review_submitted, ("paused",),
                                         "changes asked: rework on resume"),
    # With companions, theirs land first, in order; a failure after one landed asks.
    ("waiting", "merge_result"): Rule(
        companion_landing.merge_result, ONWARD,
        "merged, returned to rework, or a question (method refused)",
    ),
    # GitHub's merge queue (core/merge_queue.py): Ballet's checks reported on the
    # group's commit; the PR leaving the queue unmerged returns the work, or asks.
    # A companion's queue the same (core/companion_queue.py), in landing order.
    ("waiting", "merge_group_requested"): Rule(cq.group_requested, ("waiting",),
                                               "Ballet's checks on the queue's group"),
    ("waiting", "merge_queue_left"): Rule(cq.queue_left, ONWARD,
                                          "left the merge queue: returned, or a question"),
    # GitHub's auto-merge turned off before it merged (core/merge_pins.py): a conflict
    # returns the work, anything else asks.
    ("waiting", "auto_merge_disabled"): Rule(merge_pins.auto_merge_disabled, ONWARD,
                                             "auto-merge off: returned, or a question"),
    # The PR Ballet opened: the tracking comment moves onto it.
    ("running", "pull_request_opened"): Rule(h.pr_opened, ("running",), "PR known"),
    ("waiting", "pull_request_opened"): Rule(h.pr_opened, ("waiting",), "PR known"),
    # Its pull request in a companion (core/companions.py): the record names it.
    **{(s, "companion_pr_opened"): Rule(companions.pr_opened, (), "companion PR known")
       for s in ANY},
    # A person merging or closing the PR decides, whatever Ballet was doing.
    # (A companion's pull request closed is marked so: core/companion_events.py.)
    ("running", "pull_request_closed"): Rule(companion_events.pr_closed, ("done", "cancelled"),
                                             "PR closed"),
    ("waiting", "pull_request_closed"): Rule(companion_events.pr_closed,
                                             (*ONWARD, "cancelled"), "PR closed"),
    ("paused", "pull_request_closed"): Rule(companion_events.pr_closed, ("done", "cancelled"),
                                            "PR closed"),
    # A new head: checks wait for it, and an approval for an older head lapses
    # (a companion's: core/companion_heads.py).
    ("running", "head_pushed"): Rule(ch.head_pushed, ("running",), "new head"),
    # While the ticket's own merge is pinned to a head, another one withdraws it
    # (core/merge_pins.py).
    ("waiting", "head_pushed"): Rule(merge_pins.head_pushed, ("waiting",),
                                     "new head; approval asked again"),
    # The base moved while people or a merge waited, and the pull request conflicts
    # with it now: to the integrator, else to rework (core/base_moves.py).
    ("waiting", "base_conflict"): Rule(base_moves.base_conflict, ONWARD,
                                       "the base moved into a conflict: integrator, or rework"),
    # ...behind it where its rules want branches up to date, while GitHub's auto-merge
    # waits: brought up to date, pinned to the approved head (core/merge_pins.py).
    ("waiting", "base_behind"): Rule(merge_pins.base_behind, ("waiting",),
                                     "behind the moved base: brought up to date, pinned"),
    ("paused", "head_pushed"): Rule(ch.head_pushed, ("paused",), "new head"),
    # The issue's title or body edited: a writer's edit is the ticket's text from now
    # on; anyone else's is not heard, and the issue is told so once (core/edits.py).
    **{(s, "issue_edited"): Rule(edits.issue_edited, (), "a writer's edit adopted; others' not")
       for s in LIVE},
    # `.ballet.yml` on the default branch no longer has a required role: its sign-off
    # is no longer needed, and a ticket waiting for it goes on (core/signoffs.py).
    **{(s, "roles_in_config"): Rule(signoffs.roles_in_config, ONWARD if s != "paused" else (),
                                    "a role deleted from the configuration is not required")
       for s in LIVE},
    # Slash commands: `COMMANDS` below says which verb counts when.
    # (A refused command leaves the status as it is.)
    **{(s, "command_issued"): Rule(lambda tx, ev: command(tx, ev), (), "a slash command")
       for s in ANY},
}

Who = Literal["anyone", "write", "approver"]


@dataclass(frozen=True)
class CommandRule:
    verb: Callable[[Tx, CommandIssued, Command], str | None]
    when: tuple[Status, ...]  # statuses in which the verb counts
    who: Who  # approver: the pipeline's approvers, else anyone with write; never a bot
    to: tuple[Status, ...]  # besides staying put, which a refusal always does


COMMANDS: dict[Verb, CommandRule] = {
    "approve": CommandRule(verbs.approve, ("waiting",), "approver", ONWARD),
    "reject": CommandRule(verbs.reject, ("waiting",), "approver", ONWARD),
    "answer": CommandRule(verbs.answer, ("waiting",), "write", ONWARD),
    "retry": CommandRule(verbs.retry, ("running", "waiting", "failed"), "write", ONWARD),
    # Cancelling is never gated by sign-offs or anything else but permission.
    "cancel": CommandRule(verbs.cancel, LIVE, "write", ("cancelled",)),
    "pause": CommandRule(verbs.pause, ("running", "waiting"), "write", ("paused",)),
    "resume": CommandRule(verbs.resume, ("paused",), "write", ONWARD),
    "signoff_require": CommandRule(verbs.signoff_require, LIVE, "write", ()),
    "signoff_waive": CommandRule(verbs.signoff_waive, LIVE, "write", ONWARD),
    "policy": CommandRule(verbs.policy, LIVE, "write", ONWARD),
    # Adopts the issue's current text; answers the question a lost text raised.
    "refresh": CommandRule(edits.refresh, LIVE, "write", ONWARD),
    # Raises the ticket's cost cap; `/ballet retry` then runs the stage a cap stopped.
    "budget": CommandRule(budgets.raise_ticket_cap, LIVE, "write", ()),
    "status": CommandRule(verbs.status, ANY, "anyone", ()),
    "help": CommandRule(verbs.help_, ANY, "anyone", ()),
}
# fmt: on


def advance(
    record: Record | None, event: AnyEvent, *, write_grace: timedelta = timedelta(0)
) -> tuple[Record, list[AnyEffect]]:
    """One transition. Raises `IllegalEvent` (nothing changed) when the event
    does not apply to the ticket now. `write_grace` defers the writes of a
    session's start that its end would supersede (`outbox.with_grace`)."""
    status = record.status if record is not None else None
    rule = TABLE.get((status, event.kind))
    if rule is None:
        where = f"the ticket is {status}" if status else "there is no ticket yet"
        raise IllegalEvent(f"{event.kind} does not apply: {where}")
    tx = Tx(record, event.now)
    rule.handler(tx, event)
    allowed = (status, *destinations(rule, event))
    if tx.rec.status not in allowed:
        raise TableViolation(
            f"{event.kind} led a {status or 'new'} ticket to {tx.rec.status};"
            f" TABLE allows only {', '.join(str(s) for s in allowed)}"
        )
    version = record.version if record is not None else 0
    tx.set(version=version + 1, updated_at=event.now)
    sync_labels(tx, record)
    # Ahead of a merge: a base whose rules require Ballet's own checks refuses a merge
    # (or a place in its merge queue) asked for before they were written.
    merge_at = next((i for i, e in enumerate(tx.effects) if isinstance(e, MergePR)), None)
    at = len(tx.effects) if merge_at is None else merge_at
    runs = check_runs.check_run_effects(record, tx.rec)
    tx.effects[at:at] = [*runs, *companions.on_companions(tx.rec, runs)]
    if shows_change(record, tx.rec):
        key = steps.tracking_key(tx.rec)
        target: Literal["issue", "pr"] = "pr" if tx.rec.pr_number else "issue"
        body = render.with_marker(render.tracking(tx.rec), key.render())
        tx.emit(
            UpsertTrackingComment(
                repo=tx.rec.ticket.repo, number=tx.number, target=target, marker=key, body=body
            )
        )
    return tx.rec, outbox.with_grace(record, tx.rec, event.kind, tx.effects, event.now, write_grace)


def shows_change(before: Record | None, after: Record) -> bool:
    """Whether the tracking comment must be written: people would see a change.

    A transition only its hidden state block tells apart (checks seen while a
    session runs, a refused command) costs GitHub no edit; the next visible one
    writes the newer state. A rebuild from an older block (Redis lost) misses only
    such bookkeeping: a merge looks at the head's checks itself, and a checks wait
    reads them as it begins.
    """
    if before is None or before.pr_number != after.pr_number:
        return True
    if _digest(before) != _digest(after):
        return True  # an adopted text: a rebuild must know the issue's new text as pinned
    return render.tracking_text(before) != render.tracking_text(after)


def _digest(rec: Record) -> str | None:
    return rec.text.digest if rec.text is not None else None


def destinations(rule: Rule, event: AnyEvent) -> tuple[Status, ...]:
    """Where this event may lead besides staying put: a command's own rule says,
    and a line that is no command (an error) changes nothing."""
    if isinstance(event, CommandIssued):
        cmd = event.command
        return () if isinstance(cmd, CommandError) else COMMANDS[cmd.verb].to
    return rule.to


def command(tx: Tx, ev: CommandIssued) -> None:
    cmd = ev.command
    if isinstance(cmd, CommandError):
        tx.reply(ev.comment_id, "error", f"{cmd.message}\n\n{HELP_TEXT}")
        return
    rule = COMMANDS[cmd.verb]
    refusal = may_give(tx.rec, ev, rule) or rule.verb(tx, ev, cmd)
    if refusal:
        tx.reply(
            ev.comment_id,
            cmd.verb,
            f"@{ev.author} `/ballet {cmd.verb.replace('_', ' ')}` refused: {refusal}",
        )
    elif ev.comment_id is not None:
        tx.emit(React(repo=tx.rec.ticket.repo, comment_id=ev.comment_id))


def may_give(rec: Record, ev: CommandIssued, rule: CommandRule) -> str | None:
    """Why this person may not give this command now, or None."""
    if ev.author_is_bot:
        # Every verb, `status` and `answer` too: a bot's words never steer, nor reach a session.
        return (
            f"`{ev.author}` is a bot, and only people steer Ballet; ask a person to give it,"
            " or Ballet's operator to list this bot in BALLET_TRUSTED_BOTS."
        )
    if rec.status not in rule.when:
        return (
            f"it does nothing while the ticket is {rec.status};"
            " `/ballet status` shows where it stands and which command acts on it."
        )
    if rule.who == "anyone":
        return None
    approvers = rec.pipeline.approvers
    if rule.who == "approver" and approvers is not None:
        if ev.author.lower() in (a.lower() for a in approvers):
            return None
        return f"only the pipeline's approvers may ({', '.join(approvers)}); ask one of them."
    if ev.permission in WRITE_PERMISSIONS:
        return None
    return (
        f"it needs write permission on the repository (you have {ev.permission});"
        " ask someone with write access to give it."
    )


def labels_for(rec: Record | None) -> frozenset[Label]:
    if rec is None:
        return frozenset()
    w = rec.waiting
    by_status: dict[Status, frozenset[Label]] = {
        "running": frozenset({"ballet:running"}),
        "waiting": frozenset({"ballet:waiting"}),
        "done": frozenset({"ballet:done"}),
        "failed": frozenset({"ballet:failed"}),
    }
    labels = by_status.get(rec.status, frozenset())
    if rec.status == "waiting" and w is not None and w.kind in ("question", "approval"):
        labels |= {"ballet:question"}
    return labels


def sync_labels(tx: Tx, before: Record | None) -> None:
    old, new = labels_for(before), labels_for(tx.rec)
    repo, number = tx.rec.ticket.repo, tx.rec.ticket.number
    if new - old:
        tx.emit(SetLabels(repo=repo, number=number, labels=_ordered(new - old)))
    if old - new:
        tx.emit(RemoveLabels(repo=repo, number=number, labels=_ordered(old - new)))


def _ordered(labels: frozenset[Label]) -> tuple[Label, ...]:
    return tuple(label for label in ALL_LABELS if label in labels)
