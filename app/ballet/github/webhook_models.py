"""Lenient models of the webhook fields the translators read, event by event.

Every field is optional and a field of an unexpected shape reads as None
(`payloads.Lenient`), so a real delivery is never refused over a field Ballet
does not need; a translator that misses a field it does need ignores the
delivery with a reason instead.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ballet.github.payloads import Account, Lenient


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class LabelData(_Model):
    name: Lenient[str] = None


class AppRef(_Model):
    id: Lenient[int] = None
    slug: Lenient[str] = None
    name: Lenient[str] = None


class IssueData(_Model):
    number: Lenient[int] = None
    title: Lenient[str] = None
    body: Lenient[str] = None
    user: Lenient[Account] = None
    # GitHub documents null items: one unreadable item must not drop the others.
    labels: Lenient[tuple[Lenient[LabelData], ...]] = None
    # Present (a dict) when the "issue" is a pull request.
    pull_request: Lenient[dict[str, object]] = None


class EditChanges(_Model):
    """An `edited` delivery's `changes`: each changed field's old value, under `from`."""

    title: Lenient[dict[str, object]] = None
    body: Lenient[dict[str, object]] = None


class CommentData(_Model):
    id: Lenient[int] = None
    body: Lenient[str] = None
    user: Lenient[Account] = None
    performed_via_github_app: Lenient[AppRef] = None


class BranchTip(_Model):
    ref: Lenient[str] = None
    sha: Lenient[str] = None


class PullRequestData(_Model):
    number: Lenient[int] = None
    head: Lenient[BranchTip] = None
    merged: Lenient[bool] = None
    merged_by: Lenient[Account] = None
    body: Lenient[str] = None
    changed_files: Lenient[int] = None


class ReviewData(_Model):
    id: Lenient[int] = None
    state: Lenient[str] = None
    user: Lenient[Account] = None
    body: Lenient[str] = None  # null for a review of inline comments only
    commit_id: Lenient[str] = None  # the commit the review was made on


class PullRef(_Model):
    number: Lenient[int] = None


class CheckSuiteData(_Model):
    head_sha: Lenient[str] = None
    head_branch: Lenient[str] = None
    conclusion: Lenient[str] = None
    app: Lenient[AppRef] = None
    pull_requests: Lenient[tuple[Lenient[PullRef], ...]] = None


class CheckRunData(_Model):
    head_sha: Lenient[str] = None
    name: Lenient[str] = None
    app: Lenient[AppRef] = None
    check_suite: Lenient[CheckSuiteData] = None
    pull_requests: Lenient[tuple[Lenient[PullRef], ...]] = None


class WorkflowRunData(_Model):
    name: Lenient[str] = None
    head_sha: Lenient[str] = None
    head_branch: Lenient[str] = None
    conclusion: Lenient[str] = None
    pull_requests: Lenient[tuple[Lenient[PullRef], ...]] = None


class MergeGroupData(_Model):
    head_sha: Lenient[str] = None
    head_ref: Lenient[str] = None  # refs/heads/gh-readonly-queue/{base}/pr-{number}-{head}


class StatusBranch(_Model):
    name: Lenient[str] = None


class RepoRef(_Model):
    full_name: Lenient[str] = None


class CommitData(_Model):
    added: Lenient[tuple[str, ...]] = None
    modified: Lenient[tuple[str, ...]] = None
    removed: Lenient[tuple[str, ...]] = None


class Payload(_Model):
    """The union of every field any translator reads; absent ones stay None."""

    action: Lenient[str] = None
    label: Lenient[LabelData] = None
    issue: Lenient[IssueData] = None
    changes: Lenient[EditChanges] = None  # issues.edited
    comment: Lenient[CommentData] = None
    number: Lenient[int] = None
    pull_request: Lenient[PullRequestData] = None
    review: Lenient[ReviewData] = None
    check_suite: Lenient[CheckSuiteData] = None
    check_run: Lenient[CheckRunData] = None
    workflow_run: Lenient[WorkflowRunData] = None
    merge_group: Lenient[MergeGroupData] = None
    reason: Lenient[str] = None  # pull_request.dequeued, merge_group.destroyed
    # status
    sha: Lenient[str] = None
    state: Lenient[str] = None
    context: Lenient[str] = None
    branches: Lenient[tuple[StatusBranch, ...]] = None
    # push
    ref: Lenient[str] = None
    after: Lenient[str] = None
    commits: Lenient[tuple[CommitData, ...]] = None
    # installation
    repositories: Lenient[tuple[RepoRef, ...]] = None
    repositories_added: Lenient[tuple[RepoRef, ...]] = None
    repositories_removed: Lenient[tuple[RepoRef, ...]] = None
