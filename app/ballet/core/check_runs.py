"""A check run per stage run on the pull request's head.

Each stage run shows on the PR as a check named `ballet/<stage>` (a sign-off
session: `ballet/signoff-<role>`): `in_progress` when the run starts (or when
the PR or its head becomes known while it runs), `completed` with a conclusion
mapped from its outcome when it ends, its summary as the check's summary.

The phases of a phased stage share the stage's check run: it goes on running
from the first phase to the last and completes once, when the stage's run
ends (the last phase, or a phase whose outcome leaves the stage). A stage
entered again (a new iteration) on the same head reuses its check run; on a
new head it is a new one. The interpreter creates a check run once per
(name, head) and updates it afterwards. The empty seed commit Ballet opens the
PR on gets no check for the run the ticket started with (the PR is opened
while it runs): it shows its check with its verdict, on the head it leaves —
two writes fewer per ticket than "in progress" on a commit no one reviews,
then "superseded" there. Runs that start later on the seed get theirs. There
is no ticket-wide check: the tracking comment says where the ticket is, and
the checks what each run said.
"""

from __future__ import annotations

from ballet.core.effects import CheckRunConclusion as Conclusion
from ballet.core.effects import SetCheckRun
from ballet.core.pages import run_path
from ballet.core.record import Record, StageRun

SUCCESS = frozenset({"pass", "passed", "approve", "approved", "done", "signed_off", "merged"})
FAILURE = frozenset(
    {"failed", "fail", "changes_requested", "changes", "returned", "rejected", "reject"}
    | {"timed_out"}
)
# The run stopped without a verdict of its own: retried, paused, a new head.
CANCELLED = frozenset({"cancelled", "cancel", "retried", "paused", "superseded", "crashed"})


def conclusion_of(outcome: str | None) -> Conclusion:
    """Questions, waived or skipped runs and custom outcomes are neutral."""
    if outcome in SUCCESS:
        return "success"
    if outcome in FAILURE:
        return "failure"
    if outcome in CANCELLED:
        return "cancelled"
    return "neutral"


def name_of(run: StageRun) -> str:
    return f"ballet/signoff-{run.role}" if run.role else f"ballet/{run.stage}"


def check_run_effects(before: Record | None, after: Record) -> list[SetCheckRun]:
    """The check-run updates one transition from `before` to `after` calls for."""
    head = after.head_sha
    if after.pr_number is None or head is None:
        return []
    old = before.history if before is not None else ()
    head_moved = before is None or (before.pr_number, before.head_sha) != (after.pr_number, head)
    # A run's check on the head it started on must not stay "in progress" forever.
    left = before.head_sha if before is not None and before.pr_number is not None else None
    # The PR Ballet opened becomes known: its head is the empty seed commit.
    opening = before is not None and before.pr_number is None and head == after.seed_sha
    effects: list[SetCheckRun] = []
    for i, run in enumerate(after.history):
        was = old[i] if i < len(old) else None
        made: list[SetCheckRun] = []
        # The run the ticket started with got no check on the seed (see above).
        unchecked = i == 0 and left is not None and left == after.seed_sha
        moved_off = was is not None and was.end is None and left is not None and left != head
        if moved_off and not unchecked:
            assert left is not None
            made.append(_superseded(after, run, left, head))
        if run.end is not None and (was is None or was.end is None):
            if not _next_phase_follows(after, i):
                made.append(_completed(after, run, head))
        elif run.end is None and (was is None or head_moved) and not (opening and i == 0):
            made.append(_in_progress(after, run, head))
        key = _run_key(after, i)
        links = {"page": run_path(after, run), "job_key": run.job_key}
        if key:
            links["run_key"] = key
        effects.extend(e.model_copy(update=links) for e in made)
    return effects


def _run_key(rec: Record, i: int) -> str:
    """A run after a crash of its stage (same iteration) has a check run of its own attempt."""
    run = rec.history[i]
    same = (run.stage, run.iteration, run.role)
    crashed = any(
        r.outcome == "crashed" and (r.stage, r.iteration, r.role) == same for r in rec.history[:i]
    )
    return f"attempt-{run.attempt}" if crashed else ""


def _next_phase_follows(rec: Record, i: int) -> bool:
    """Run `i` is a phase and the stage's next phase runs after it."""
    run, nxt = rec.history[i], rec.history[i + 1] if i + 1 < len(rec.history) else None
    return (
        nxt is not None
        and run.phase is not None
        and nxt.phase is not None
        and nxt.role is None
        and (nxt.stage, nxt.iteration, nxt.attempt) == (run.stage, run.iteration, run.attempt)
    )


def _in_progress(rec: Record, run: StageRun, head: str) -> SetCheckRun:
    what = f"phase `{run.phase}` of " if run.phase else ""
    who = f"sign-off by role `{run.role}` before " if run.role else ""
    summary = f"Running {who}{what}stage `{run.stage}`, iteration {run.iteration}."
    if rec.waiting is not None:
        summary += f"\n\nWaiting for {rec.waiting.reason}."
    return SetCheckRun(
        repo=rec.ticket.repo,
        ticket=rec.key,
        name=name_of(run),
        head_sha=head,
        status="in_progress",
        summary=summary,
    )


def _completed(rec: Record, run: StageRun, head: str) -> SetCheckRun:
    summary = f"**{run.outcome}**" + (f": {run.summary}" if run.summary else "")
    return SetCheckRun(
        repo=rec.ticket.repo,
        ticket=rec.key,
        name=name_of(run),
        head_sha=head,
        status="completed",
        conclusion=conclusion_of(run.outcome),
        summary=summary,
    )


def _superseded(rec: Record, run: StageRun, old_head: str, head: str) -> SetCheckRun:
    return SetCheckRun(
        repo=rec.ticket.repo,
        ticket=rec.key,
        name=name_of(run),
        head_sha=old_head,
        status="completed",
        conclusion="neutral",
        summary=f"The pull request's head moved to {head}; this run goes on there.",
        closes_start=True,
    )
