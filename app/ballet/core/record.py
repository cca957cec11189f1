"""The ticket's state record: everything Ballet knows about one ticket.

It lives in Redis and, written through on every transition, in a hidden block
`<!-- ballet:state v1 … -->` of the ticket's tracking comment, so a record can
always be rebuilt from GitHub. The block holds compact JSON, zlib-compressed
and base64-encoded: the base64 alphabet cannot close an HTML comment, and a
ticket with fifty stage runs stays far below GitHub's 65,536-character limit.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ballet.core.config import Policy, ResolvedPipeline
from ballet.core.pinned_text import WORDS, PinnedText
from ballet.core.report import Handoff, Usage
from ballet.core.returns import ReturnCause, SignoffChange
from ballet.core.spend import Spend

Status = Literal["running", "waiting", "done", "failed", "cancelled", "paused"]
TERMINAL: tuple[Status, ...] = ("done", "failed", "cancelled")
# What a waiting ticket waits for; `question` and `approval` need a person.
WaitKind = Literal[
    "question",
    "approval",
    "checks",
    "review",
    "merge",
    "merge_result",
    "merge_queue",
    "auto_merge",  # GitHub's auto-merge, pinned to `Waiting.sha` (core/merge_pins.py)
]

STATE_FORMAT = "v1"
_BLOCK = re.compile(r"<!-- ballet:state (?P<fmt>\S+) (?P<data>[A-Za-z0-9+/=\s]*?) -->")


def ticket_key(repo: str, number: int) -> str:
    """A ticket's one name, `owner/repo#n`: its Redis keys, events and BALLET_TICKET."""
    return f"{repo}#{number}"


def split_key(key: str) -> tuple[str, int]:
    """`owner/repo#n` -> (`owner/repo`, n)."""
    repo, _, number = key.rpartition("#")
    return repo, int(number)


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TicketRef(Frozen):
    repo: str  # "owner/name"
    number: int  # the issue number
    author: str
    title: str
    # Who added the label: a writer, where the author may be a stranger. Empty in
    # records from before it was kept.
    requested_by: str = ""

    @property
    def key(self) -> str:
        return ticket_key(self.repo, self.number)

    @property
    def asked(self) -> str:
        """Whom the ticket's questions go to: the writer who started it, who can
        answer them (`/ballet answer` needs write permission; the author may not have it)."""
        return self.requested_by or self.author


class Waiting(Frozen):
    """What exactly the ticket waits for and who can act on it."""

    kind: WaitKind
    reason: str
    who: tuple[str, ...] = ()  # logins; empty means anyone with write permission
    command: str = ""  # the command that acts on it, e.g. "/ballet answer <text>"
    since: datetime
    sha: str | None = None  # the head a checks wait is for, or a merge is pinned to
    checks_started: bool = False  # a checks wait with nothing started times out sooner
    group_sha: str | None = None  # a merge-queue wait: the commit of the pull request's group


class ChecksSeen(Frozen):
    """The latest check state Ballet heard of for a commit, kept so a checks
    wait entered after CI already finished settles at once."""

    sha: str
    # None: started, not finished. "finished": a check finished green, whether all
    # did is not read yet (the edge reads it when a wait needs it: `ReadChecks`).
    outcome: Literal["pass", "fail", "finished"] | None = None
    summary: str = ""


class StageRun(Frozen):
    stage: str
    iteration: int
    attempt: int
    phase: str | None = None
    role: str | None = None  # set for a sign-off session of that role
    outcome: str | None = None
    summary: str = ""
    start: datetime
    end: datetime | None = None
    report_ref: str | None = None  # marker key of the report comment
    job_key: str | None = None  # the session's job, for agent and sign-off runs
    usage: Usage = Usage()
    # What the session's model gateway metered (None: no gateway, e.g. a run before it).
    spend: Spend | None = None
    # Set while the run's session waits, queued, for a worker of this pool (none is up).
    awaits_pool: str | None = None


class QA(Frozen):
    question: str
    stage: str | None  # the stage to re-run once answered
    role: str | None = None
    asked_at: datetime
    answer: str | None = None
    answered_by: str | None = None
    phase: str | None = None


class Approval(Frozen):
    by: str
    sha: str | None  # the head SHA it was given for
    at: datetime


class SignOff(Frozen):
    role: str
    by: str  # "role:<name>" for a session, a login for a person
    at: datetime


class CompanionPR(Frozen):
    """The ticket's pull request in one of its companions (`companions:`), kept from
    the first session that left commits on the ticket's branch there."""

    repo: str  # "owner/name"
    head_sha: str  # the branch's head as the last session pushed it
    number: int | None = None  # None: asked to be opened, not heard of yet
    state: Literal["open", "merged", "closed"] = "open"
    # A writer of that repository's approving review, of the head it names
    # (core/landing_approval.py: where people decide, each one is approved).
    approval: Approval | None = None
    # Its checks' verdict heard on a head while the ticket could not act on it (a
    # session ran): a red one returns the ticket when it comes to land
    # (core/companion_reds.py), unless a new head was pushed there since.
    checks: ChecksSeen | None = None


class Record(Frozen):
    ticket: TicketRef
    ticket_type: str
    pipeline: ResolvedPipeline  # pinned snapshot; carries its version and hash
    status: Status
    stage: str | None = None
    phase: str | None = None
    iteration: int = 1
    attempt: int = 1
    waiting: Waiting | None = None
    pr_number: int | None = None
    branch: str | None = None
    base: str
    head_sha: str | None = None
    # The empty commit Ballet opened the PR on: no one reviews it, so no check goes on it.
    seed_sha: str | None = None
    history: tuple[StageRun, ...] = ()
    signoffs_required: tuple[str, ...] = ()
    signoffs_given: tuple[SignOff, ...] = ()
    signoffs_waived: tuple[str, ...] = ()
    signoff_changes: tuple[SignoffChange, ...] = ()  # what people required and waived
    signoff_role: str | None = None  # the role whose sign-off session runs now
    gate_target: str | None = None  # where the ticket goes once sign-offs are in
    # The gate a conflict with the moved base took the ticket from to its integrator,
    # which brings it back there instead of landing it (core/base_moves.py).
    resume_at: str | None = None
    ready_for_review: bool = False
    questions: tuple[QA, ...] = ()
    policy: Policy
    sessions_used: int = 0
    cost_used: float = 0.0
    # What writers added to the pipeline's cost cap (`/ballet budget +N`, core/budgets.py).
    budget_added_usd: float = 0.0
    approval: Approval | None = None
    checks: ChecksSeen | None = None
    handoff: Handoff | None = None  # the previous phase's handoff, for the next phase
    paused_from: Status | None = None
    # Why the ticket last came back for rework: its sessions are told (core.returns).
    returned: tuple[ReturnCause, ...] = ()
    # Reviews asking for changes while a session or a merge ran: they act when it ends.
    pending_reviews: tuple[ReturnCause, ...] = ()
    ended_by: str | None = None  # a person who merged or closed the PR themselves
    # The title and body as the ticket runs on them (core/pinned_text.py);
    # None for a ticket started before tickets pinned their text.
    text: PinnedText | None = None
    # Its pull requests in its companions, in landing order (core/companions.py).
    companion_prs: tuple[CompanionPR, ...] = ()
    version: int = 1
    created_at: datetime
    updated_at: datetime

    @property
    def key(self) -> str:
        return self.ticket.key

    @property
    def cost_cap_usd(self) -> float | None:
        """The ticket's cost cap: the pipeline's plus writers' additions; None: no cap."""
        base = self.pipeline.budget.cost_usd
        return None if base is None else round(base + self.budget_added_usd, 2)

    @property
    def unpriced_requests(self) -> int:
        """Model requests of the ticket's sessions no price was known for (not in cost_used)."""
        return sum(r.spend.unpriced_requests for r in self.history if r.spend is not None)

    @property
    def open_run(self) -> StageRun | None:
        last = self.history[-1] if self.history else None
        return last if last is not None and last.end is None else None

    @property
    def open_question(self) -> QA | None:
        last = self.questions[-1] if self.questions else None
        return last if last is not None and last.answer is None else None

    def with_companion_pr(self, changed: CompanionPR) -> tuple[CompanionPR, ...]:
        """The companions' pull requests, the one of `changed`'s repository replaced by it."""
        return tuple(changed if p.repo == changed.repo else p for p in self.companion_prs)

    def missing_signoffs(self) -> tuple[str, ...]:
        # A role no longer in the configuration is no longer required.
        given = {s.role for s in self.signoffs_given}
        roles = self.pipeline.roles
        return tuple(r for r in self.signoffs_required if r not in given and r in roles)


class RecordFormatError(ValueError):
    """The tracking comment holds no readable state block."""


def encode_record(record: Record) -> str:
    """The hidden block for a tracking comment; `decode_record` reverses it. The
    pinned text's words stay in Redis: an issue body alone can fill a comment, and
    its digest is enough to know the issue's text again (core/pinned_text.py)."""
    raw = record.model_dump_json(exclude_defaults=True, exclude={"text": set(WORDS)}).encode()
    data = base64.b64encode(zlib.compress(raw, 9)).decode("ascii")
    return f"<!-- ballet:state {STATE_FORMAT} {data} -->"


def as_on_github(record: Record) -> Record:
    """The record as its tracking comment's state block keeps it: without the pinned
    text's words (`decode_record(encode_record(r)) == as_on_github(r)`)."""
    if record.text is None or not record.text.known:
        return record
    words = dict.fromkeys(WORDS)
    return record.model_copy(update={"text": record.text.model_copy(update=words)})


def decode_record(text: str) -> Record:
    """Find the state block in a comment body and parse it."""
    match = _BLOCK.search(text)
    if match is None:
        raise RecordFormatError(
            "no '<!-- ballet:state … -->' block found; is this Ballet's tracking comment?"
        )
    if match["fmt"] != STATE_FORMAT:
        raise RecordFormatError(
            f"state block format {match['fmt']!r} is not {STATE_FORMAT!r}; upgrade Ballet"
        )
    try:
        raw = zlib.decompress(base64.b64decode("".join(match["data"].split()), validate=True))
        return Record.model_validate(json.loads(raw))
    except (binascii.Error, zlib.error, ValueError, ValidationError) as exc:
        raise RecordFormatError(
            f"state block is damaged ({exc.__class__.__name__}); rebuild it with "
            "'/ballet retry' or from Redis"
        ) from exc
