"""The effect interpreter: the one place the engine's effects become GitHub calls.

Every effect is safe to carry out twice, because the job that carries it out
may be retried after a crash or a rate limit:
- comments are found by their hidden marker (a Redis memo of the comment id
  first, else by listing) and edited, never posted a second time; on a pull
  request Ballet opened itself, the memo's ledger knows every comment it made,
  so a new one is posted without listing first (tickets/memo.py);
- a branch that already exists is kept, and an open PR from the branch is reused;
- labels are added and removed idempotently; a check run is created once per
  (name, head) and updated afterwards.

Results the engine must hear (the PR was opened, the merge came out one way
or another) are returned as follow-up events. A merge waits for the head's
checks (other Apps' and CI's; Ballet's own never gate it): red checks return
the work, running ones park the merge until they finish.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

import structlog

from ballet.core.effects import (
    AnyEffect,
    CancelSession,
    ConvertToDraft,
    LinkPullRequest,
    MarkReadyForReview,
    MergePR,
    OpenBranchAndDraftPR,
    OpenCompanionPR,
    PostComment,
    PostReply,
    PostReportComment,
    React,
    ReadChecks,
    RemoveLabels,
    ReplyToReview,
    RequestReviewers,
    SetCheckRun,
    SetLabels,
    StartSession,
    UpdateBranch,
    UpsertTrackingComment,
    WithdrawMerge,
)
from ballet.core.events import AnyEvent, MergeResult, PullRequestOpened
from ballet.core.pages import ticket_path
from ballet.core.record import split_key, ticket_key
from ballet.core.render import REPORT_LINK_SCHEME, marker_for, with_marker
from ballet.github.forge import (
    CheckRunSpec,
    Comment,
    Forge,
    ForgeError,
    NotFound,
    PullRequest,
    find_comment,
)
from ballet.tickets import branch_writes, held_merge
from ballet.tickets.branch_writes import BranchWriter
from ballet.tickets.checks import read_checks
from ballet.tickets.companion_prs import link_pull_request, open_companion_pr
from ballet.tickets.memo import Memo
from ballet.tickets.merge_queue import land_by_queue
from ballet.tickets.mergeability import behind_base, computed_pr
from ballet.tickets.page_links import PageLinks, with_ticket_link

log = structlog.get_logger("ballet.tickets.interpret")

_REPORT_LINK = re.compile(r"\[report\]\(" + re.escape(REPORT_LINK_SCHEME) + r"([^)\s]+)\)")

CommentEffect = UpsertTrackingComment | PostReportComment | PostComment | PostReply


class SessionLauncher(Protocol):
    """Where stage sessions go: the lead wires this to the pools' sessions queues.
    A launch may answer an event for the ticket (its pool has no live worker)."""

    async def launch(self, effect: StartSession) -> AnyEvent | None: ...

    async def cancel(self, effect: CancelSession) -> None: ...


class Interpreter:
    def __init__(
        self,
        forge: Forge,
        memo: Memo,
        launcher: SessionLauncher,
        *,
        clock: Callable[[], datetime],
        own_app_id: int | None = None,
        own_login: str | None = None,
        pages: PageLinks | None = None,
        branches: BranchWriter | None = None,
    ) -> None:
        self._forge = forge
        # Branch writes by git from the worker's mirror (None: by REST, branch_writes.py).
        self._branches = branches
        self._memo = memo
        self._launcher = launcher
        self._clock = clock
        # Ballet's own check runs (its stage runs) never gate its merges.
        self._own_app_id = own_app_id
        # Only the App's own comment is edited in place: a copy of its marker posted
        # by someone else would otherwise be found first (and be refused the edit).
        self._own_login = own_login
        # Ballet's pages (BALLET_PUBLIC_URL): check runs link them, and show a log's end.
        self._pages = pages

    async def apply(self, effect: AnyEffect) -> AnyEvent | None:
        """Carry out one effect; the event the engine must hear about it, if any."""
        match effect:
            case OpenBranchAndDraftPR():
                return await self._open_pr(effect)
            case OpenCompanionPR():
                return await open_companion_pr(self._forge, effect, self._clock)
            case LinkPullRequest():
                await link_pull_request(self._forge, effect)
            case UpsertTrackingComment():
                body = await self._link_reports(effect.repo, effect.number, effect.body)
                if self._pages is not None:
                    _, number = split_key(effect.marker.ticket)
                    page = self._pages.url(ticket_path(effect.repo, number))
                    body = with_ticket_link(body, page)
                await self.upsert_comment(
                    effect.repo, effect.number, effect.marker.render(), body, effect.marker.ticket
                )
            case PostReportComment() | PostComment() | PostReply():
                await self.upsert_comment(
                    effect.repo,
                    effect.number,
                    effect.marker.render(),
                    effect.body,
                    effect.marker.ticket,
                )
            case SetLabels():
                await self._forge.add_labels(effect.repo, effect.number, effect.labels)
            case RemoveLabels():
                for label in effect.labels:
                    await self._forge.remove_label(effect.repo, effect.number, label)
            case React():
                await self._forge.react(effect.repo, effect.comment_id, effect.content)
            case SetCheckRun(ticket=ticket):
                await self._check_run(effect, ticket)
            case StartSession():
                return await self._launcher.launch(effect)
            case CancelSession():
                await self._launcher.cancel(effect)
            case MergePR():
                return await self._merge(effect)
            case WithdrawMerge():
                await held_merge.withdraw(self._forge, self._memo, effect)
            case UpdateBranch():
                return await held_merge.update_pinned(self._forge, effect, self._clock())
            case ReadChecks():
                return await read_checks(
                    self._forge, effect.repo, effect.sha, self._own_app_id, self._clock()
                )
            case ReplyToReview():
                await self._reply_to_review(effect)
            case MarkReadyForReview():
                await self._forge.mark_ready_for_review(effect.repo, effect.number)
            case ConvertToDraft():
                await self._forge.convert_to_draft(effect.repo, effect.number)
            case RequestReviewers():
                await self._forge.request_reviewers(effect.repo, effect.number, effect.reviewers)
        return None

    async def _reply_to_review(self, effect: ReplyToReview) -> None:
        """Answer on the review's first inline thread. A review without one has no
        thread: the rework's report comment, which mentions its author, tells them."""
        marker = marker_for(effect.marker.render())
        if await self._memo.comment_id(effect.repo, effect.number, marker) is not None:
            return  # told already (the effect is being retried)
        review = await self._forge.review(effect.repo, effect.number, effect.review_id)
        first = next((c for c in review.comments if c.in_reply_to is None), None)
        if first is None:
            return
        await self._forge.reply_to_review_comment(effect.repo, effect.number, first.id, effect.body)
        await self._memo.remember_comment(effect.repo, effect.number, marker, first.id)

    async def _link_reports(self, repo: str, number: int, body: str) -> str:
        """Point the tracking table's report links at the report comments."""
        links: dict[str, str] = {}
        for key in set(_REPORT_LINK.findall(body)):
            comment_id = await self._memo.comment_id(repo, number, marker_for(key))
            # A report this edge has not written (yet) gets no link rather than a dead one.
            links[key] = "report" if comment_id is None else f"[report](#issuecomment-{comment_id})"
        return _REPORT_LINK.sub(lambda match: links[match[1]], body)

    async def upsert_comment(
        self, repo: str, number: int, key: str, body: str, ticket: str | None = None
    ) -> Comment:
        """Create the comment named by `key` on issue/PR `number`, or edit it in place."""
        marker = marker_for(key)
        if marker not in body:
            body = with_marker(body, key)
        known = await self._memo.comment_id(repo, number, marker)
        if known is not None:
            try:
                return await self._forge.edit_comment(repo, known, body)
            except NotFound:  # deleted by a person: find or post it afresh
                await self._memo.forget_comment(repo, number, marker)
        existing = None
        if not await self._never_made(repo, number, marker, ticket):
            existing = await find_comment(self._forge, repo, number, marker, author=self._own_login)
        if existing is not None:
            if existing.body == body:
                comment = existing
            else:
                comment = await self._forge.edit_comment(repo, existing.id, body)
        else:
            await self._memo.creating_comment(repo, number, marker)
            comment = await self._forge.create_comment(repo, number, body)
        await self._memo.remember_comment(repo, number, marker, comment.id)
        return comment

    async def _never_made(self, repo: str, number: int, marker: str, ticket: str | None) -> bool:
        """The ledger vouches that this comment does not exist, so listing is not needed."""
        return (
            ticket is not None
            and await self._memo.ledger(ticket) == number
            and not await self._memo.comment_was_being_created(repo, number, marker)
        )

    async def _open_pr(self, effect: OpenBranchAndDraftPR) -> AnyEvent:
        forge, repo = self._forge, effect.repo
        ticket = ticket_key(repo, effect.issue)
        # Only a retry (the mark is left) looks for a PR and branch a crash left behind;
        # the first try creates them, and a PR that exists after all makes GitHub say so.
        retried = await self._memo.pr_was_being_created(ticket)
        pr = await forge.find_pr_by_head(repo, effect.branch) if retried else None
        if pr is None:
            await self._memo.creating_pr(ticket)
            try:
                pr = await self._create_pr(effect, look_first=retried)
            except ForgeError as exc:
                pr = await forge.find_pr_by_head(repo, effect.branch) if exc.status == 422 else None
                if pr is None:
                    raise
            else:
                # Ballet opened it just now: nothing is on it yet, so the memo can
                # know everything Ballet puts there (and the ticket's check runs).
                await self._memo.open_ledger(ticket, pr.number)
        return PullRequestOpened(now=self._clock(), number=pr.number, head_sha=pr.head_sha)

    async def _create_pr(self, effect: OpenBranchAndDraftPR, *, look_first: bool) -> PullRequest:
        forge, repo = self._forge, effect.repo
        message = f"Start {effect.title} (#{effect.issue})"
        if self._branches is not None:
            # Its fetch finds a branch an earlier try made: no look first, no second one.
            await branch_writes.start_branch(
                forge, self._branches, repo, branch=effect.branch, base=effect.base, message=message
            )
        elif not look_first or await forge.branch_sha(repo, effect.branch) is None:
            base = await forge.branch_head(repo, effect.base)
            if base is None:
                raise NotFound(f"the base branch {effect.base!r} does not exist in {repo}")
            # GitHub opens no pull request for a branch without commits of its
            # own, so the ticket branch starts with an empty commit.
            await forge.create_branch(
                repo,
                effect.branch,
                base.sha,
                seed_message=message,
                seed_tree=base.tree,
            )
        return await forge.open_draft_pr(
            repo, head=effect.branch, base=effect.base, title=effect.title, body=effect.body
        )

    async def _check_run(self, effect: SetCheckRun, ticket: str) -> None:
        pages, text = self._pages, ""
        if pages is not None and effect.status == "completed" and effect.job_key:
            text = await pages.log_end(effect.job_key)
        spec = CheckRunSpec(
            name=effect.name,
            head_sha=effect.head_sha,
            status=effect.status,
            conclusion=effect.conclusion,
            title=effect.name,
            summary=effect.summary,
            text=text,
            external_id=f"ballet:{effect.run_key}" if effect.run_key else "ballet",
            details_url=pages.url(effect.page) if pages is not None and effect.page else None,
        )
        # One check run per (name, head), or per attempt after a crash (`run_key`).
        name = f"{effect.name}@{effect.run_key}" if effect.run_key else effect.name
        memo = self._memo
        run_id = await memo.check_run_id(effect.repo, name, effect.head_sha)
        never_made = (
            run_id is None
            and bool(ticket)
            and await memo.ledger(ticket) is not None
            and not await memo.check_run_was_being_created(effect.repo, name, effect.head_sha)
        )
        if run_id is None and not never_made:
            # Not remembered: never made, or Redis lost the memo. GitHub knows which:
            # its external id names the run, so a lost memo never makes a second one.
            run_id = await self._forge.find_check_run(
                effect.repo, effect.head_sha, effect.name, spec.external_id or ""
            )
        if run_id is not None:
            await self._forge.update_check_run(effect.repo, run_id, spec)
            await self._memo.remember_check_run(effect.repo, name, effect.head_sha, run_id)
            return
        await memo.creating_check_run(effect.repo, name, effect.head_sha)
        run_id = await self._forge.create_check_run(effect.repo, spec)
        await self._memo.remember_check_run(effect.repo, name, effect.head_sha, run_id)

    async def _merge(self, effect: MergePR) -> AnyEvent | None:
        """Merge once the head's checks are green; None while they still run.

        The engine waits for the merge's result: the edge owns "wait for the
        checks, then merge" (docs/architecture.md, "Stage kinds"). A merge that
        must wait is kept in the memo and resumed by `resume_merge` when checks finish.
        """
        repo, number, now = effect.repo, effect.number, self._clock()
        # Not GitHub's null of a mergeability still computed: a behind branch must be seen.
        pr = await computed_pr(self._forge, repo, number)
        if pr.merged or pr.state == "closed" or pr.mergeable is False:
            return await self._merge_now(effect, pr)  # merge_pr names the outcome
        if await behind_base(self._forge, repo, pr):  # pinned to the update
            return await held_merge.bring_up_to_date(self._forge, self._memo, effect, pr, now)
        if pr.draft:
            # GitHub refuses to merge a draft; merging is the end of the review.
            await self._forge.mark_ready_for_review(repo, number)
        checks = await self._forge.checks_for_ref(repo, pr.head_sha)
        if self._own_app_id is not None:
            checks = checks.without_app(self._own_app_id)
        if checks.failed:
            await self._memo.forget_pending_merge(repo, number)
            names = ", ".join(c.name for c in checks.failed)
            detail = f"checks failed on {pr.head_sha[:12]}: {names}"
            return MergeResult(now=self._clock(), result="checks_failed", detail=detail, repo=repo)
        # Where auto-merge is the repository's way and its rules hold the merge back.
        if auto := await held_merge.by_auto_merge(self._forge, self._memo, effect, pr, now):
            return auto
        if checks.pending:
            log.info("merge waits for checks", repo=repo, pr=number, sha=pr.head_sha)
            return await self._merge_waits(effect)
        # A companion's too joins its base's queue where its rules require one.
        queued = await land_by_queue(self._forge, effect, pr, self._clock())
        if queued is None:
            return await self._merge_now(effect, pr)
        await self._memo.forget_pending_merge(repo, number)
        return queued

    async def _merge_waits(self, effect: MergePR) -> AnyEvent | None:
        """The merge waits for checks: the ticket's own resumes when they finish; a
        companion's, whose checks the ticket does not hear, says so (the engine tries
        it again at its ticks)."""
        if effect.companion:
            return MergeResult(now=self._clock(), result="checks_pending", repo=effect.repo)
        await self._memo.remember_pending_merge(effect)
        return None

    async def resume_merge(self, repo: str, number: int) -> AnyEvent | None:
        """Try a merge that waited for checks again; None if none waits or checks still run."""
        effect = await self._memo.pending_merge(repo, number)
        return await self._merge(effect) if effect is not None else None

    async def _merge_now(self, effect: MergePR, pr: PullRequest) -> AnyEvent:
        await self._memo.forget_pending_merge(effect.repo, effect.number)
        result = await self._forge.merge_pr(
            effect.repo,
            effect.number,
            method=effect.method,
            sha=effect.sha,
            commit_title=effect.commit_title,
            pr=pr,
        )
        status = result.status
        if status == "merged" and effect.delete_branch:
            # The head the PR named when it was read before the merge: no second read.
            if self._branches is not None:
                await branch_writes.delete_branch(
                    self._forge, self._branches, effect.repo, pr.head_ref
                )
            else:
                await self._forge.delete_branch(effect.repo, pr.head_ref)
        if status == "not_mergeable":
            # GitHub refused for a reason of its own (branch protection, a head
            # that moved): the work goes back with GitHub's words as the reason.
            log.info("merge refused", repo=effect.repo, pr=effect.number, detail=result.detail)
            status = "checks_failed"
        return MergeResult(
            now=self._clock(), result=status, detail=result.detail, sha=result.sha, repo=effect.repo
        )
