"""What one session needs (`RunnerSpec`) and what it gives back (`SessionResult`).

The engine's StartSession effect is mapped into a `RunnerSpec`; the session
runner turns it into a workspace, an environment, a prompt and a process, and
returns a `SessionResult` the worker turns into a SessionFinished event.

Model and effort: `runtime` carries the runtime's defaults from `.ballet.yml`;
`model`/`effort` here are the *stage's own* overrides (None when the stage sets
none). `ballet.sessions.routing` combines them with the phase.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ballet.core.config import Phase, Runtime, StageKind
from ballet.core.lineage import TicketLinks
from ballet.core.record import ticket_key
from ballet.core.report import Handoff, Report, Usage
from ballet.core.spend import Cap, SessionBudget, Spend
from ballet.sessions.returns import ReturnInfo, Signoffs

# Why a session ended `failed` without a report of its own (None: it reported).
FailureReason = Literal[
    "workspace",  # the clone could not be prepared (e.g. the base branch is missing)
    "runtime",  # the runtime could not be started (bad config, CLI not installed)
    "timeout",
    "exit_code",  # non-zero exit and no report
    "missing_report",
    "invalid_report",
    "invalid_handoff",
    "push",  # the ticket branch could not be pushed
    "secret",  # the commits carry a declared secret's value: nothing was pushed
    # A limit the kernel enforced stopped it (confine/verdict.py; docs/security.md):
    "memory",  # processes killed for its memory limit
    "processes",  # forks refused at its process limit
    "disk",  # its disk (clone, HOME, /tmp) full
    "cpu",  # out of time while held to its CPU limit
]


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TicketInfo(Frozen):
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")  # owner/name
    number: int = Field(ge=1)
    title: str
    body: str = ""
    labels: tuple[str, ...] = ()
    author: str
    url: str
    # The ticket's text changed since its previous session, and by whom (core/edits.py).
    text_change: str = ""

    @property
    def ref(self) -> str:
        """`owner/repo#n`, the form BALLET_TICKET carries."""
        return ticket_key(self.repo, self.number)


class StageInfo(Frozen):
    id: str
    kind: StageKind = "agent"
    skills: tuple[str, ...] = ()
    instructions: str = ""
    # The outcomes it may report, each with what it does (core/outcomes.py); empty: unknown.
    outcomes: dict[str, str] = Field(default_factory=dict)


class EarlierReport(Frozen):
    """A report of an earlier session of the same ticket."""

    stage: str
    iteration: int = Field(ge=1)
    phase: Phase | None = None
    report: Report
    handoff: Handoff | None = None  # what the session handed on (phased stages)


class Answer(Frozen):
    """A person's answer to a question a session raised."""

    question: str
    answer: str
    author: str | None = None


class CompanionInfo(Frozen):
    """Another repository the ticket may change (`.ballet.yml` `companions:`): the
    session gets a clone of it on the ticket's branch, made from `base` (its default
    branch) when the branch does not exist there yet."""

    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    clone_url: str  # without credentials, as the ticket repository's
    base: str
    pr_number: int | None = None  # its pull request, once Ballet opened one


class RunnerSpec(Frozen):
    ticket: TicketInfo
    stage: StageInfo
    skill_texts: dict[str, str] = Field(default_factory=dict)  # skill name -> markdown
    iteration: int = Field(default=1, ge=1)
    attempt: int = Field(default=1, ge=1)
    phase: Phase | None = None
    runtime: Runtime
    model: str | None = None  # the stage's own override
    effort: str | None = None  # the stage's own override
    timeout_seconds: float = Field(default=3600, gt=0)
    pipeline_name: str
    pipeline_version: int = Field(default=1, ge=1)
    # None: a pipeline without a branch (nothing is pushed; the base is checked out).
    branch: str | None
    base: str
    # An integrator's session: `merge` or `rebase` the base in; `rebase` may rewrite the branch.
    update_with: Literal["merge", "rebase"] | None = None
    pr_number: int | None = None
    earlier_reports: tuple[EarlierReport, ...] = ()  # oldest first
    answers: tuple[Answer, ...] = ()
    handoff: Handoff | None = None  # the previous phase's handoff
    # `.ballet.yml` `phases:`: where on the branch the handoffs are also written (None:
    # nowhere), whether the stage's last phase removes them, and whether this is it.
    artefact_path: str | None = None
    gc_on_close: bool = True
    last_phase: bool = False
    clone_url: str  # without credentials; the token is passed per git command
    links: TicketLinks = Field(default_factory=TicketLinks)  # the epic and the lineage
    returned: tuple[ReturnInfo, ...] = ()  # why the ticket came back for rework
    signoffs: Signoffs = Field(default_factory=Signoffs)
    # What was removed from its texts from GitHub, and where (sessions/untrusted.py).
    hidden_text: tuple[str, ...] = ()
    # The caps its model gateway enforces, and whose month it counts in (gateway/).
    budget: SessionBudget = Field(default_factory=SessionBudget)
    installation_id: int | None = None
    # The ticket's other repositories, in landing order (docs/session-contract.md).
    companions: tuple[CompanionInfo, ...] = ()


class SessionResult(Frozen):
    report: Report
    head_sha: str | None  # the ticket branch after the session (pushed when it moved)
    usage: Usage
    duration_seconds: float
    handoff: Handoff | None
    output_tail: str
    failure_reason: FailureReason | None = None
    # Connections the session's egress proxy let through and refused.
    egress_allowed: int = 0
    egress_refused: int = 0
    # What its model gateway metered (None: the runtime holds no provider key), and the
    # cap that refused a request, which makes the outcome `budget`.
    spend: Spend | None = None
    cap_reached: Cap | None = None
    # Per companion whose ticket branch has commits of its own: that branch's head,
    # pushed (none for a failed session: nothing of it is pushed).
    companion_heads: dict[str, str] = Field(default_factory=dict)
