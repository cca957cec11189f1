"""The sandbox's world: repositories and everything people and the App did to them.

Plain dataclasses kept in memory for the life of one server; git objects live in
the bare repositories on disk. Handlers mutate these under the event loop, so no
locking is needed except around git pushes (see githttp).
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ballet.sandbox.gitcache import GitMemo, RefLock
from ballet.sandbox.references import References
from ballet.sandbox.webhooks import WebhookQueue

if TYPE_CHECKING:
    from ballet.sandbox.faults import Faults

# GitHub's permission levels, weakest first: the index is the strength.
PERMISSION_LEVELS = ("none", "read", "triage", "write", "maintain", "admin")
MERGE_METHODS = ("merge", "squash", "rebase")


def permission_at_least(have: str, need: str) -> bool:
    return PERMISSION_LEVELS.index(have) >= PERMISSION_LEVELS.index(need)


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    description: str | None = None


@dataclass
class Comment:
    id: int
    issue_number: int
    body: str
    user: str
    created_at: datetime
    updated_at: datetime
    reactions: list[tuple[int, str, str]] = field(default_factory=list)  # (id, user, content)


@dataclass
class Issue:
    """An issue, or the issue half of a pull request (GitHub shares the numbering)."""

    id: int
    number: int
    title: str
    body: str | None
    user: str
    created_at: datetime
    updated_at: datetime
    labels: list[str] = field(default_factory=list)
    state: str = "open"
    state_reason: str | None = None
    closed_at: datetime | None = None
    assignees: list[str] = field(default_factory=list)
    is_pull: bool = False
    parent: int | None = None  # the number of the issue this one is a sub-issue of
    sub_issues: list[int] = field(default_factory=list)  # numbers, in GitHub's order


@dataclass(frozen=True)
class PullStats:
    commits: int = 0
    additions: int = 0
    deletions: int = 0
    changed_files: int = 0


@dataclass(frozen=True)
class AutoMerge:
    """A pull request's auto-merge, as enabled (auto_merge.py): GitHub merges it as
    `enabled_by` once the base's rules let it."""

    enabled_by: str
    merge_method: str
    commit_title: str
    commit_message: str


@dataclass
class Pull:
    id: int
    number: int
    head_ref: str
    base_ref: str
    head_sha: str
    draft: bool
    merged: bool = False
    merged_at: datetime | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None
    requested_reviewers: list[str] = field(default_factory=list)
    maintainer_can_modify: bool = True
    # Kept from the moment of merging: afterwards the base contains the head.
    merged_stats: PullStats | None = None
    auto_merge: AutoMerge | None = None


@dataclass
class Review:
    id: int
    pull_number: int
    user: str
    body: str
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED
    commit_id: str
    submitted_at: datetime


@dataclass
class ReviewComment:
    """An inline comment of a review, anchored to a line of the pull request's diff."""

    id: int
    pull_number: int
    review_id: int  # GitHub files every comment under a review, a reply under one of its own
    user: str
    body: str
    path: str
    line: int
    side: str  # LEFT: the base's line numbers; RIGHT: the head's
    start_line: int | None
    start_side: str | None
    commit_id: str
    position: int  # lines below the file's first hunk header in the diff
    diff_hunk: str
    created_at: datetime
    in_reply_to_id: int | None = None


@dataclass
class CheckSuite:
    id: int
    head_sha: str
    head_branch: str | None
    before: str | None
    created_at: datetime
    updated_at: datetime
    status: str = "queued"
    conclusion: str | None = None
    origin: str = "app"  # "app": runs Ballet created; "ci": the repository's own CI


@dataclass
class CheckRun:
    id: int
    suite_id: int
    name: str
    head_sha: str
    started_at: datetime
    status: str = "queued"
    conclusion: str | None = None
    completed_at: datetime | None = None
    details_url: str | None = None
    external_id: str | None = None
    output: dict[str, Any] = field(default_factory=dict)
    # GitHub adds each update's annotations to the run's; they are read apart from `output`.
    annotations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CommitStatus:
    id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: str
    created_at: datetime


@dataclass
class Ruleset:
    """A repository ruleset (`POST /repos/{owner}/{repo}/rulesets`); `rules` as given,
    each `{"type", "parameters"?}` (rulesets.py reads them)."""

    id: int
    name: str
    target: str
    enforcement: str  # active | disabled | evaluate: only active ones bind
    include: list[str]  # conditions.ref_name: refs/heads/… patterns, ~DEFAULT_BRANCH, ~ALL
    exclude: list[str]
    rules: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime


@dataclass
class QueueEntry:
    """A pull request in its base branch's merge queue; the first of a base has a merge
    group: its commit on `group_ref`, built on `group_base_sha` (merge_queue.py)."""

    id: int
    pull_number: int
    base_ref: str
    head_sha: str
    enqueued_by: str
    enqueued_at: datetime
    group_ref: str | None = None
    group_sha: str | None = None
    group_base_sha: str | None = None


@dataclass
class Repo:
    id: int
    owner: str
    name: str
    default_branch: str
    path: Path
    created_at: datetime
    collaborators: dict[str, str]
    installation_id: int
    # Private: only the owner, collaborators and the App's installation see it at all.
    private: bool = False
    ci_command: list[str] | None = None
    merge_methods: tuple[str, ...] = MERGE_METHODS
    delete_branch_on_merge: bool = False
    allow_auto_merge: bool = False  # "Allow auto-merge" in the repository's settings
    pushed_at: datetime | None = None
    labels: dict[str, Label] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    comments: dict[int, Comment] = field(default_factory=dict)
    pulls: dict[int, Pull] = field(default_factory=dict)
    reviews: dict[int, Review] = field(default_factory=dict)
    review_comments: dict[int, ReviewComment] = field(default_factory=dict)
    suites: dict[int, CheckSuite] = field(default_factory=dict)
    runs: dict[int, CheckRun] = field(default_factory=dict)
    statuses: list[CommitStatus] = field(default_factory=list)
    rulesets: dict[int, Ruleset] = field(default_factory=dict)
    merge_queue: list[QueueEntry] = field(default_factory=list)  # in queue order
    # One push (or API ref change) at a time, so ref snapshots see only their own change;
    # it keeps the refs between writes (gitcache).
    ref_lock: RefLock = field(default_factory=RefLock)
    git_memo: GitMemo = field(default_factory=GitMemo)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def permission_of(self, login: str) -> str:
        """A collaborator's permission; anyone else may read and comment a public repository
        and has none on a private one."""
        if login == self.owner:
            return "admin"
        return self.collaborators.get(login, "none" if self.private else "read")

    def has_explicit_access(self, login: str) -> bool:
        """Owner or collaborator: what GitHub's `/user/installations/...` lists, as opposed
        to the read access everyone has to a public repository."""
        return login == self.owner or login in self.collaborators


@dataclass
class Token:
    token: str
    expires_at: datetime
    installation_id: int
    # A token asked for some repositories only (their ids); None: all the installation's.
    repository_ids: frozenset[int] | None = None
    # The permissions asked for (token_scope.py checks them); None: all the App's.
    permissions: dict[str, str] | None = None


@dataclass(frozen=True)
class OAuthCode:
    """A code the web flow handed to the callback; it becomes a user token once."""

    login: str
    client_id: str
    redirect_uri: str
    expires_at: datetime
    code_challenge: str | None = None
    code_challenge_method: str = "plain"


@dataclass(frozen=True)
class UserToken:
    """A user access token (`ghu_…`) or refresh token (`ghr_…`) of the App's OAuth client."""

    login: str
    expires_at: datetime


@dataclass
class AppIdentity:
    """The one GitHub App the sandbox hosts; its private key is handed to Ballet."""

    app_id: int
    slug: str
    webhook_secret: str
    private_key_pem: bytes
    public_key_pem: bytes
    # Set when the App was registered through the manifest flow (manifest_flow.py);
    # None: the sandbox's defaults (shapes.PERMISSIONS, shapes.EVENTS).
    name: str | None = None
    permissions: dict[str, str] | None = None
    events: tuple[str, ...] | None = None
    # The App's OAuth client, for the web flow that signs people in (oauth.py); GitHub
    # Apps' client ids look like `Iv23li` and 14 hex digits.
    client_id: str = field(default_factory=lambda: "Iv23li" + secrets.token_hex(7))
    client_secret: str = field(default_factory=lambda: secrets.token_hex(20))
    # The registered callback URLs; None: `<Ballet's public URL>/oauth/callback`, Ballet's
    # public URL being the scheme and host of the webhook URL (see oauth.callback_urls).
    callback_urls: tuple[str, ...] | None = None

    @property
    def bot_login(self) -> str:
        return f"{self.slug}[bot]"


@dataclass
class Sandbox:
    app: AppIdentity
    data_dir: Path
    base_url: str
    token_ttl_seconds: float
    ci_timeout_seconds: float
    hooks: WebhookQueue
    repos: dict[str, Repo] = field(default_factory=dict)  # "owner/name" (lowercase) -> Repo
    # Which issue and comment texts may name an issue: the timeline's index.
    references: References = field(default_factory=References)
    installations: dict[str, int] = field(default_factory=dict)  # owner -> installation id
    tokens: dict[str, Token] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    # Accounts deleted (`DELETE /_sandbox/users/{login}`): their comments show `"user": null`.
    deleted_users: set[str] = field(default_factory=set)
    # The fault plan on now (`POST /_sandbox/faults`), None when GitHub is well.
    faults: Faults | None = None
    # Background work (CI runs) kept referenced until done, and cancelled at shutdown.
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    # Manifest-flow codes not yet converted: code -> (manifest, owner).
    manifest_codes: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)
    # The OAuth web flow (oauth.py): codes not yet exchanged, user and refresh tokens.
    oauth_codes: dict[str, OAuthCode] = field(default_factory=dict)
    user_tokens: dict[str, UserToken] = field(default_factory=dict)
    refresh_tokens: dict[str, UserToken] = field(default_factory=dict)
    oauth_code_ttl_seconds: float = 600
    user_token_ttl_seconds: float = 8 * 3600
    # Display names set with `PUT /_sandbox/users/{login}`; a login not here is its own name.
    user_names: dict[str, str | None] = field(default_factory=dict)
    # Told of each commit whose check runs or statuses changed (the merge queue listens).
    check_listeners: list[Callable[[Repo, str], None]] = field(default_factory=list)
    # Told of each review submitted (a pull request's number), and of each branch moved
    # (its name and who moved it): auto-merge listens.
    review_listeners: list[Callable[[Repo, int], None]] = field(default_factory=list)
    branch_listeners: list[Callable[[Repo, str, str], None]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def next_id(self) -> int:
        return next(self._ids)

    def checks_reported(self, repo: Repo, sha: str) -> None:
        for listener in self.check_listeners:
            listener(repo, sha)

    def reviewed(self, repo: Repo, number: int) -> None:
        for listener in self.review_listeners:
            listener(repo, number)

    def branch_moved(self, repo: Repo, branch: str, pusher: str) -> None:
        for listener in self.branch_listeners:
            listener(repo, branch, pusher)

    def repo(self, owner: str, name: str) -> Repo | None:
        return self.repos.get(f"{owner}/{name}".lower())

    def installation_for(self, owner: str) -> int:
        """One installation per owner, made on first use: the App is installed everywhere."""
        if owner not in self.installations:
            self.installations[owner] = self.next_id()
        return self.installations[owner]

    def owner_of_installation(self, installation_id: int) -> str | None:
        for owner, iid in self.installations.items():
            if iid == installation_id:
                return owner
        return None
