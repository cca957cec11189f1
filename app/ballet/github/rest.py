"""The production forge: the `Forge` Protocol on GitHub's REST and GraphQL APIs.

Requests go through `GitHubClient` (client.py: App auth, Redis-shared
tokens, ETag cache, pacing, rate limits). Responses are read with lenient
models of only the fields Ballet uses (`models.py`), so the sandbox and
GitHub Enterprise versions that add or drop fields are read alike.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pydantic import TypeAdapter

from ballet.core.events import Permission
from ballet.github import models as m
from ballet.github.auto_merge import AutoMergeCalls
from ballet.github.branches import BranchCalls
from ballet.github.checks import ChecksCalls
from ballet.github.client import (
    PER_PAGE,
    GitHubClient,
)
from ballet.github.forge import (
    CheckRunSpec,
    Comment,
    ForgeError,
    GitRemote,
    HeadMoved,
    IssueDetails,
    MergeMethod,
    MergeResult,
    NotFound,
    PullRequest,
    ReactionContent,
)
from ballet.github.issue_graph import IssueGraphCalls
from ballet.github.merge_methods import MergeStrategyCalls
from ballet.github.merge_queue import MergeQueueCalls
from ballet.github.reviews import ReviewCalls
from ballet.github.up_to_date import UpToDateCalls
from ballet.github.urls import git_url

__all__ = ["GitHubForge"]

# Repositories listed per installation: far beyond any one installation's.
MAX_LISTED = 10_000
_content_list = TypeAdapter(list[m.ContentItem])
_comment_list = TypeAdapter(list[m.IssueComment])
_pr_list = TypeAdapter(list[m.PullRequestData])
_file_list = TypeAdapter(list[m.PullFile])


class GitHubForge(
    AutoMergeCalls,
    BranchCalls,
    ChecksCalls,
    IssueGraphCalls,
    MergeQueueCalls,
    MergeStrategyCalls,
    ReviewCalls,
    UpToDateCalls,
):
    """The `Forge` Protocol on one installation's token."""

    _client: GitHubClient

    def __init__(
        self,
        client: GitHubClient,
        api_url: str,
        git_client: Callable[[str], GitHubClient],
        installed_here: Callable[[str], Awaitable[bool]],
    ) -> None:
        self._client = client
        self._api_url = api_url
        # Given a repository, a client whose token reaches that one repository's
        # contents and nothing else (TokenScope.git): what git pushes with.
        self._git_client = git_client
        # Whether the App is installed on a repository through this installation
        # (asked with the App's JWT: exact for "all" and "selected" installations alike).
        self._installed_here = installed_here
        # A forge lives for one event's handling: the drafts it has just seen, by
        # node id, spare marking one ready a second GET of the pull request.
        self._drafts: dict[tuple[str, int], str] = {}

    # -- repository contents ------------------------------------------------

    async def default_branch(self, repo: str) -> str:
        return m.Repository.model_validate(
            await self._client.json("GET", f"/repos/{repo}")
        ).default_branch

    async def file_text(self, repo: str, path: str, ref: str) -> str | None:
        try:
            data = await self._client.json(
                "GET", f"/repos/{repo}/contents/{path}", params={"ref": ref}
            )
        except NotFound:
            return None
        if isinstance(data, list):
            raise ForgeError(f"{repo}:{path} at {ref} is a directory, not a file")
        item = m.ContentItem.model_validate(data)
        if item.type != "file" or item.content is None:
            return None
        return base64.b64decode(item.content).decode("utf-8")

    async def list_directory(self, repo: str, path: str, ref: str) -> tuple[str, ...]:
        try:
            data = await self._client.json(
                "GET", f"/repos/{repo}/contents/{path}", params={"ref": ref}
            )
        except NotFound:
            return ()
        if not isinstance(data, list):
            return ()
        return tuple(
            item.name for item in _content_list.validate_python(data) if item.type == "file"
        )

    # -- branches and pull requests ------------------------------------------

    async def open_draft_pr(
        self, repo: str, *, head: str, base: str, title: str, body: str
    ) -> PullRequest:
        data = await self._client.json(
            "POST",
            f"/repos/{repo}/pulls",
            json={"title": title, "head": head, "base": base, "body": body, "draft": True},
        )
        return m.pull_request_of(m.PullRequestData.model_validate(data))

    async def find_pr_by_head(self, repo: str, head: str) -> PullRequest | None:
        owner = repo.split("/")[0]
        data = await self._client.json(
            "GET", f"/repos/{repo}/pulls", params={"head": f"{owner}:{head}", "state": "open"}
        )
        for pr in _pr_list.validate_python(data):
            if pr.head.ref == head:
                return m.pull_request_of(pr)
        return None

    async def _pr_data(self, repo: str, number: int) -> m.PullRequestData:
        pr = m.PullRequestData.model_validate(
            await self._client.json("GET", f"/repos/{repo}/pulls/{number}")
        )
        if pr.draft:
            self._drafts[(repo, number)] = pr.node_id
        else:
            self._drafts.pop((repo, number), None)
        return pr

    async def get_issue(self, repo: str, number: int) -> IssueDetails:
        try:
            raw = await self._client.json("GET", f"/repos/{repo}/issues/{number}")
        except NotFound as exc:
            raise NotFound(f"{exc}; was the issue deleted or transferred?") from exc
        data = m.IssueData.model_validate(raw)
        return IssueDetails(
            body=data.body or "",
            labels=data.label_names,
            url=data.html_url,
            has_parent=data.has_parent,
            title=data.title,
        )

    async def repositories(self) -> tuple[str, ...]:
        """The repositories this installation reaches."""
        names: list[str] = []
        for page in range(1, MAX_LISTED // PER_PAGE + 1):
            data = m.InstallationRepositories.model_validate(
                await self._client.json(
                    "GET", "/installation/repositories", params={"per_page": PER_PAGE, "page": page}
                )
            )
            names += (r.full_name for r in data.repositories)
            if len(data.repositories) < PER_PAGE or len(names) >= data.total_count:
                break
        return tuple(names)

    async def reached(self, repos: Sequence[str]) -> frozenset[str]:
        return frozenset([r.lower() for r in repos if await self._installed_here(r)])

    async def open_issues_labelled(self, repo: str, label: str) -> tuple[int, ...]:
        """Numbers of the open issues (not pull requests) that carry `label`."""
        data = await self._client.pages(
            f"/repos/{repo}/issues", params={"labels": label, "state": "open"}
        )
        items = (m.IssueListItem.model_validate(item) for item in data)
        return tuple(i.number for i in items if i.pull_request is None)

    async def get_pr(self, repo: str, number: int) -> PullRequest:
        return m.pull_request_of(await self._pr_data(repo, number))

    async def set_pr_body(self, repo: str, number: int, body: str) -> None:
        await self._client.call("PATCH", f"/repos/{repo}/pulls/{number}", json={"body": body})

    async def list_pr_files(self, repo: str, number: int) -> tuple[str, ...]:
        files = _file_list.validate_python(
            await self._client.pages(f"/repos/{repo}/pulls/{number}/files")
        )
        return tuple(f.filename for f in files)

    # -- comments, labels, reactions -------------------------------------------

    async def list_comments(self, repo: str, issue_number: int) -> tuple[Comment, ...]:
        data = await self._client.pages(f"/repos/{repo}/issues/{issue_number}/comments")
        return tuple(m.comment_of(c) for c in _comment_list.validate_python(data))

    async def create_comment(self, repo: str, issue_number: int, body: str) -> Comment:
        data = await self._client.json(
            "POST", f"/repos/{repo}/issues/{issue_number}/comments", json={"body": body}
        )
        return m.comment_of(m.IssueComment.model_validate(data))

    async def edit_comment(self, repo: str, comment_id: int, body: str) -> Comment:
        data = await self._client.json(
            "PATCH", f"/repos/{repo}/issues/comments/{comment_id}", json={"body": body}
        )
        return m.comment_of(m.IssueComment.model_validate(data))

    async def add_labels(self, repo: str, issue_number: int, labels: tuple[str, ...]) -> None:
        await self._client.call(
            "POST", f"/repos/{repo}/issues/{issue_number}/labels", json={"labels": list(labels)}
        )

    async def remove_label(self, repo: str, issue_number: int, label: str) -> None:
        with contextlib.suppress(NotFound):
            await self._client.call("DELETE", f"/repos/{repo}/issues/{issue_number}/labels/{label}")

    async def react(self, repo: str, comment_id: int, content: ReactionContent) -> None:
        await self._client.call(
            "POST",
            f"/repos/{repo}/issues/comments/{comment_id}/reactions",
            json={"content": content},
        )

    # -- checks ----------------------------------------------------------------

    async def create_check_run(self, repo: str, spec: CheckRunSpec) -> int:
        data = await self._client.json(
            "POST", f"/repos/{repo}/check-runs", json=m.check_run_body(spec)
        )
        return m.CheckRunData.model_validate(data).id

    async def update_check_run(self, repo: str, check_run_id: int, spec: CheckRunSpec) -> None:
        body = m.check_run_body(spec)
        body.pop("head_sha")
        await self._client.call("PATCH", f"/repos/{repo}/check-runs/{check_run_id}", json=body)

    async def find_check_run(
        self, repo: str, head_sha: str, name: str, external_id: str
    ) -> int | None:
        runs = m.CheckRunList.model_validate(
            await self._client.json(
                "GET",
                f"/repos/{repo}/commits/{head_sha}/check-runs",
                params={"check_name": name, "filter": "all", "per_page": PER_PAGE},
            )
        )
        found = [r.id for r in runs.check_runs if r.name == name and r.external_id == external_id]
        return max(found, default=None)

    # -- merging and review ----------------------------------------------------

    async def merge_pr(
        self,
        repo: str,
        number: int,
        *,
        method: MergeMethod,
        sha: str | None = None,
        commit_title: str | None = None,
        pr: PullRequest | None = None,
    ) -> MergeResult:
        read_before = pr is not None
        pr = pr or await self.get_pr(repo, number)
        settled = _settled(pr)
        if settled is not None:
            return settled
        body: dict[str, Any] = {"merge_method": method}
        if sha is not None:
            body["sha"] = sha
        if commit_title is not None:
            body["commit_title"] = commit_title
        try:
            data = await self._client.json("PUT", f"/repos/{repo}/pulls/{number}/merge", json=body)
        except ForgeError as exc:
            if exc.status not in (405, 409):
                raise
            if read_before:
                # The caller read the PR a moment ago: what changed since may be why.
                pr = await self.get_pr(repo, number)
                settled = _settled(pr)
                if settled is not None:
                    return settled
            refused = await self.refused_method(repo, method, exc)
            if refused is not None:
                return MergeResult("method_not_allowed", refused)
            checks = await self.checks_for_ref(repo, pr.head_sha)
            if checks.failed:
                names = ", ".join(c.name for c in checks.failed)
                return MergeResult("checks_failed", f"checks failed: {names}")
            if checks.pending:
                # Branch protection holds the merge for required checks still running.
                names = ", ".join(c.name for c in checks.pending)
                return MergeResult("checks_pending", f"checks still running: {names}")
            return MergeResult("not_mergeable", str(exc))
        return MergeResult("merged", "", m.MergeData.model_validate(data).sha)

    async def update_branch(
        self, repo: str, number: int, expected_head_sha: str | None = None
    ) -> bool:
        body = {} if expected_head_sha is None else {"expected_head_sha": expected_head_sha}
        try:
            await self._client.call("PUT", f"/repos/{repo}/pulls/{number}/update-branch", json=body)
        except ForgeError as exc:
            if exc.status == 422 and "expected" in str(exc).lower():
                raise HeadMoved(str(exc), status=422) from exc
            if exc.status == 422:  # merge conflict, or nothing to update
                return "conflict" not in str(exc).lower()
            raise
        return True

    async def mark_ready_for_review(self, repo: str, number: int) -> None:
        node_id = self._drafts.pop((repo, number), None)
        if node_id is None:
            pr = await self._pr_data(repo, number)
            if not pr.draft:
                return
            node_id = self._drafts.pop((repo, number), pr.node_id)
        await self._client.graphql(
            "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id})"
            " { pullRequest { isDraft } } }",
            {"id": node_id},
        )

    async def convert_to_draft(self, repo: str, number: int) -> None:
        pr = await self._pr_data(repo, number)
        if pr.draft or pr.state != "open":
            return
        await self._client.graphql(
            "mutation($id: ID!) { convertPullRequestToDraft(input: {pullRequestId: $id})"
            " { pullRequest { isDraft } } }",
            {"id": pr.node_id},
        )
        self._drafts[(repo, number)] = pr.node_id

    async def request_reviewers(self, repo: str, number: int, reviewers: tuple[str, ...]) -> None:
        if reviewers:
            await self._client.call(
                "POST",
                f"/repos/{repo}/pulls/{number}/requested_reviewers",
                json={"reviewers": list(reviewers)},
            )

    async def permission(self, repo: str, login: str) -> Permission:
        try:
            data = await self._client.json("GET", f"/repos/{repo}/collaborators/{login}/permission")
        except NotFound:
            return "none"
        return m.permission_of(m.PermissionData.model_validate(data).permission)

    async def git_remote(self, repo: str) -> GitRemote:
        # The token githubkit holds for the scope (sealed in Redis); asking for it
        # spends no API request unless a new one must be minted.
        token = await self._git_client(repo).installation_token()
        return GitRemote(url=git_url(self._api_url, repo), token=token)


def _settled(pr: PullRequest) -> MergeResult | None:
    """The merge's outcome when the PR as read already decides it."""
    if pr.merged:
        return MergeResult("merged", "the pull request was already merged")
    if pr.state == "closed":
        return MergeResult("closed", "the pull request was closed without merging")
    if pr.mergeable is False or pr.mergeable_state == "dirty":
        return MergeResult("conflict", f"{pr.head_ref} conflicts with {pr.base_ref}")
    return None
