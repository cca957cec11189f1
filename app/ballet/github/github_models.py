"""Lenient models of the GitHub API responses the forge reads.

Only the fields Ballet uses; everything else is ignored, so GitHub, GitHub
Enterprise and the sandbox are all read alike.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class AppData(Lenient):
    id: int
    slug: str


class InstallationData(Lenient):
    id: int


class Repository(Lenient):
    default_branch: str


class ContentItem(Lenient):
    type: str
    name: str
    path: str = ""
    content: str | None = None


class GitObject(Lenient):
    sha: str


class GitRef(Lenient):
    ref: str
    object: GitObject


class GitCommit(Lenient):
    sha: str
    tree: GitObject


class BranchTip(Lenient):
    ref: str
    sha: str


class PullRequestData(Lenient):
    number: int
    node_id: str = ""
    head: BranchTip
    base: BranchTip
    state: Literal["open", "closed"]
    merged: bool = False
    draft: bool = False
    mergeable: bool | None = None
    mergeable_state: str = "unknown"
    html_url: str = ""
    body: str | None = None


class PullFile(Lenient):
    filename: str
    status: str = "modified"


class User(Lenient):
    login: str


class IssueComment(Lenient):
    id: int
    body: str | None = None
    user: User
    html_url: str = ""


class AppRef(Lenient):
    id: int | None = None


class CheckRunData(Lenient):
    id: int
    app: AppRef | None = None
    name: str = ""
    status: Literal["queued", "in_progress", "completed"] = "queued"
    conclusion: str | None = None
    html_url: str | None = None


class CheckRunList(Lenient):
    check_runs: tuple[CheckRunData, ...] = ()


class StatusData(Lenient):
    context: str
    state: str
    target_url: str | None = None


class CombinedStatus(Lenient):
    state: Literal["success", "failure", "pending"] = "pending"
    statuses: tuple[StatusData, ...] = ()


class MergeData(Lenient):
    sha: str | None = None
    merged: bool = True


class PermissionData(Lenient):
    permission: Literal["admin", "maintain", "write", "triage", "read", "none"]
