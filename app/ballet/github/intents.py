"""What a webhook delivery means to Ballet, before any API call is made.

Translation is pure: a delivery becomes one or more intents. Most carry a
core event bound for a ticket; the ticket service resolves the rest with I/O
(which ticket a pull request belongs to, the commenter's permission, the
repository's `.ballet.yml`) before anything reaches the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ballet.core.commands import ParsedCommand
from ballet.core.events import (
    AutoMergeDisabled,
    ChecksCompleted,
    ChecksStarted,
    HeadPushed,
    IssueEdited,
    MergeGroupRequested,
    MergeQueueLeft,
    PullRequestClosed,
    ReviewSubmitted,
)

TicketBoundEvent = (
    ChecksStarted
    | ChecksCompleted
    | HeadPushed
    | IssueEdited
    | PullRequestClosed
    | ReviewSubmitted
    | MergeGroupRequested
    | MergeQueueLeft
    | AutoMergeDisabled
)


@dataclass(frozen=True)
class TicketTarget:
    """How to find the ticket a delivery is about; the store tries each clue in turn."""

    repo: str
    issue: int | None = None
    pr: int | None = None
    branch: str | None = None
    # The issue a pull request's body closes ("Closes #n"): found even if Redis was lost.
    linked_issue: int | None = None


@dataclass(frozen=True)
class StartTicket:
    installation_id: int
    repo: str
    issue: int
    title: str
    body: str
    author: str  # who opened the issue
    labels: tuple[str, ...]
    label: str  # the label just added; a ticket starts if it is the trigger label
    requested_by: str  # who added the label
    requested_by_is_bot: bool  # a bot BALLET_TRUSTED_BOTS does not list (readers._is_bot)
    default_branch: str | None  # as the delivery says; None: ask the API
    now: datetime


@dataclass(frozen=True)
class IssueCommands:
    installation_id: int
    target: TicketTarget
    on_pr: bool
    comment_id: int
    author: str
    author_is_bot: bool  # a bot BALLET_TRUSTED_BOTS does not list (readers._is_bot)
    commands: tuple[ParsedCommand, ...]
    now: datetime


@dataclass(frozen=True)
class ForTicket:
    installation_id: int
    target: TicketTarget
    event: TicketBoundEvent


@dataclass(frozen=True)
class ValidateConfigInPR:
    """A pull request was opened or pushed: if it edits `.ballet.yml`, check the new file."""

    installation_id: int
    repo: str
    pr: int
    head_sha: str


@dataclass(frozen=True)
class ConfigChanged:
    """`.ballet.yml` or a skill changed on the default branch: new tickets read it afresh."""

    installation_id: int
    repo: str
    sha: str


@dataclass(frozen=True)
class BaseMoved:
    """A branch moved: tickets waiting on it as their base look at their pull request."""

    installation_id: int
    repo: str
    branch: str
    sha: str
    files: tuple[str, ...]  # added, modified or removed by the push's commits


@dataclass(frozen=True)
class InstallationChanged:
    installation_id: int
    action: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ignored:
    reason: str


Intent = (
    StartTicket
    | IssueCommands
    | ForTicket
    | ValidateConfigInPR
    | ConfigChanged
    | BaseMoved
    | InstallationChanged
    | Ignored
)
