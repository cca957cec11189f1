"""The runner's spec of a stage session: the engine's `SessionSpec` plus what only
GitHub, the record store and Redis know (the ticket's pinned title and body, the
issue's labels and URL, skill texts, answered questions, earlier reports, the
clone URL).

Built when the session job starts, not when the engine launches it, so a
session queued behind busy slots sees the ticket as it is when it runs; the
issue's read may have begun at the launch moments before (jobs/prefetch.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import structlog

from ballet.core.edits import change_note
from ballet.core.effects import SessionSpec
from ballet.core.lineage import TicketLinks
from ballet.core.outcomes import signoff_outcomes, stage_outcomes
from ballet.core.record import Record, ticket_key
from ballet.github.forge import ForgeError, IssueDetails
from ballet.jobs.services import SessionJobs
from ballet.sessions import Answer, RunnerSpec, StageInfo, TicketInfo
from ballet.sessions.returns import ReturnInfo, Signoffs
from ballet.sessions.spec import CompanionInfo
from ballet.sessions.untrusted import without_hidden_text

_T = TypeVar("_T")

log = structlog.get_logger("ballet.jobs.session_specs")


def ticket_of(spec: SessionSpec) -> str:
    return ticket_key(spec.repo, spec.issue)


class StaleSession(Exception):
    """The ticket no longer runs this session (cancelled or moved on while it was queued)."""


def runner_stage_id(spec: SessionSpec) -> str:
    """The stage a session reports as: a sign-off session is the role's, not the stage's."""
    return f"signoff-{spec.role}" if spec.kind == "signoff" and spec.role else spec.stage


async def build_runner_spec(
    jobs: SessionJobs, spec: SessionSpec, *, clone_url: Awaitable[str] | None = None
) -> RunnerSpec:
    """The runner's spec: the engine's, plus what only GitHub, the store and Redis know.
    `clone_url`: the repository's URL being asked already (the session job asks it
    once, for the workspace too)."""
    ticket = ticket_of(spec)
    # Five reads of their own (Redis, GitHub), together: one round trip's wait, not five.
    reads = await asyncio.gather(
        jobs.tickets.record(ticket),
        _issue(jobs, spec),
        jobs.artifacts.of(ticket),
        clone_url or jobs.tickets.clone_url(spec.repo),
        jobs.tickets.installation_of(spec.repo),
        return_exceptions=True,
    )
    record = _value(reads[0])  # a stale session is told so before any other error
    run = record.open_run if record else None
    if record is not None and (run is None or run.job_key != spec.job_key):
        raise StaleSession(f"{ticket} has moved on ({record.status}, stage {record.stage})")
    issue, stored, url = _value(reads[1]), _value(reads[2]), _value(reads[3])
    title, body = pinned_text(spec, record, issue)
    # What Redis lost of the finished sessions' reports is read back from their comments.
    earlier_reports = await jobs.artifacts.earlier_reports(ticket, record, stored)
    # A first session was asked for before its PR opened; the record knows it now.
    pr_number = spec.pr_number or (record.pr_number if record else None)
    causes = spec.returned
    # The epic and lineage, what GitHub holds of the return's cause, the companions.
    links, returned, companions = await asyncio.gather(
        _links(jobs, spec, issue, body, pr_number),
        jobs.returns.read(spec.repo, pr_number, causes)
        if jobs.returns is not None and causes
        else _known(tuple(ReturnInfo.of(c) for c in causes)),
        _companions(jobs, record),
    )
    custom = record.pipeline.custom_skills if record else {}
    texts = {**custom, **jobs.builtin_skills}  # a built-in name can never be shadowed
    answers = tuple(
        Answer(question=q.question, answer=q.answer, author=q.answered_by)
        for q in (record.questions if record else ())
        if q.answer is not None
    )
    if record is None:  # the record went missing: keep the engine's answers, unattributed
        answers = tuple(Answer(question="", answer=a) for a in spec.answers)
    built = RunnerSpec(
        ticket=TicketInfo(
            repo=spec.repo,
            number=spec.issue,
            title=title,
            body=body,
            labels=issue.labels,
            author=spec.author,
            url=issue.url,
            text_change=change_note(record) if record is not None else "",
        ),
        stage=StageInfo(
            id=runner_stage_id(spec),
            skills=spec.skills,
            instructions=spec.instructions,
            outcomes=outcomes_of(spec, record),
        ),
        skill_texts={name: texts[name] for name in spec.skills if name in texts},
        iteration=spec.iteration,
        attempt=spec.attempt,
        phase=spec.phase,
        runtime=spec.runtime_config,
        model=spec.model,
        effort=spec.effort,
        timeout_seconds=spec.timeout_minutes * 60,
        pipeline_name=spec.pipeline,
        pipeline_version=spec.pipeline_version,
        branch=spec.branch,
        base=spec.base,
        update_with=spec.update_with,
        pr_number=spec.pr_number,
        earlier_reports=earlier_reports,
        answers=answers,
        handoff=spec.handoff,
        **phase_files(spec, record),
        clone_url=url,
        links=links or TicketLinks(),
        returned=returned,
        signoffs=Signoffs(
            required=spec.signoffs_required,
            given=spec.signoffs_given,
            changes=spec.signoff_changes,
        ),
        budget=spec.budget,
        # Unknown (Redis lost it): the installation's monthly cap waits for the next session.
        installation_id=reads[4] if isinstance(reads[4], int) else None,
        companions=companions,
    )
    # Off the event loop: a hostile 64 KiB body can take a parser seconds.
    return await asyncio.to_thread(without_hidden_text, built)


def outcomes_of(spec: SessionSpec, record: Record | None) -> dict[str, str]:
    """What the session may report and what each does; unknown without the record."""
    if spec.kind == "signoff" and spec.role:
        return signoff_outcomes(spec.role)
    if record is None or spec.stage not in {s.id for s in record.pipeline.stages}:
        return {}
    return stage_outcomes(record.pipeline, spec.stage, spec.phase)


def phase_files(spec: SessionSpec, record: Record | None) -> dict[str, Any]:
    """Where a phase's handoff is also written on the branch, and whether this phase,
    the stage's last, removes them (`.ballet.yml` `phases:`)."""
    if spec.phase is None or record is None or spec.kind == "signoff":
        return {}
    settings = record.pipeline.phase_settings
    stage = next((s for s in record.pipeline.stages if s.id == spec.stage), None)
    return {
        "artefact_path": settings.artefact_path,
        "gc_on_close": settings.gc_on_close,
        "last_phase": stage is not None and stage.phases[-1:] == (spec.phase,),
    }


class PinnedTextUnknown(ForgeError):
    """The ticket's record came back from GitHub without its pinned text's words, and
    the issue's text is another: no session runs on it (core/pinned_text.py). A
    ForgeError, so the session ends failed with this message rather than raising."""


def pinned_text(spec: SessionSpec, record: Record | None, issue: IssueDetails) -> tuple[str, str]:
    """The title and body the session works from: the ticket's pinned text, not the
    issue as it is now (an edit only a writer's adoption makes the ticket's). A ticket
    started before tickets pinned their text, or whose record is gone, reads the issue."""
    text = record.text if record is not None else None
    if text is None:
        return spec.title, issue.body
    if text.title is None or text.body is None:
        raise PinnedTextUnknown(
            "the issue's text is no longer the one the ticket pinned, and Ballet lost its "
            "copy of the pinned text with its Redis data; someone with write permission: "
            "read the issue, then `/ballet refresh` to adopt its current text"
        )
    return text.title, text.body


async def _issue(jobs: SessionJobs, spec: SessionSpec) -> IssueDetails:
    """The issue as read at the session's launch when that read is fresh, else now."""
    begun = jobs.prefetch.issue_read(spec.job_key) if jobs.prefetch is not None else None
    if begun is not None:
        try:
            return await begun
        except Exception as exc:  # read again: that read's error, if it lasts, is reported
            log.info("issue read again", job_key=spec.job_key, error=repr(exc))
    return await jobs.tickets.issue(spec.repo, spec.issue)


async def _links(
    jobs: SessionJobs, spec: SessionSpec, issue: IssueDetails, body: str, pr_number: int | None
) -> TicketLinks | None:
    """The epic and lineage; the references are the pinned body's, not an edit's."""
    if jobs.links is None:
        return None
    return await jobs.links.read(
        spec.repo,
        spec.issue,
        body,
        has_parent=issue.has_parent,
        branch=spec.branch,
        own_pr=pr_number,
    )


async def _companions(jobs: SessionJobs, record: Record | None) -> tuple[CompanionInfo, ...]:
    """The ticket's companions (pinned with its pipeline): where to clone each from,
    its default branch, its pull request once known."""
    if record is None or not record.pipeline.companions:
        return ()
    numbers = {pr.repo: pr.number for pr in record.companion_prs}

    async def one(repo: str) -> CompanionInfo:
        url, base = await asyncio.gather(
            jobs.tickets.clone_url(repo), jobs.tickets.default_branch(repo)
        )
        return CompanionInfo(repo=repo, clone_url=url, base=base, pr_number=numbers.get(repo))

    return tuple(await asyncio.gather(*(one(r) for r in record.pipeline.companions)))


async def _known(value: _T) -> _T:
    return value


def _value(outcome: _T | BaseException) -> _T:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
