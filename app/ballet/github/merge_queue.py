"""The base branch's rules and GitHub's merge queue: the calls of `GitHubForge` that
land a pull request where a ruleset requires the queue (kept here so the adapter's
module stays short).

`GET /repos/{owner}/{repo}/rules/branches/{branch}` lists every rule that applies to
a branch, from every active ruleset; it is read through the client's ETag cache, so
asking again before each landing is usually a 304. A branch with no rules answers
`[]`; a GitHub without rulesets (an older Enterprise Server) answers 404, read as
no rules. A queue is joined with GraphQL `enqueuePullRequest`, with
`expectedHeadOid` naming the head Ballet's checks passed on, so a head that moved
meanwhile is refused rather than queued unchecked.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, TypeAdapter

from ballet.github.errors import ForgeError, NotFound

ENQUEUE = (
    "mutation($id: ID!, $oid: GitObjectID) { enqueuePullRequest(input: {pullRequestId: $id,"
    " expectedHeadOid: $oid}) { mergeQueueEntry { id position state } } }"
)
# GitHub's prefix of the refs its merge queue builds groups on.
QUEUE_REF_PREFIX = "gh-readonly-queue/"


class _Client(Protocol):
    async def json(self, method: str, path: str, **kwargs: Any) -> Any: ...

    async def graphql(self, query: str, variables: dict[str, Any]) -> None: ...


class BranchRule(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str


_rules = TypeAdapter(list[BranchRule])


class QueueRefused(ForgeError):
    """GitHub would not put the pull request in its merge queue; GitHub's words."""


class MergeQueueCalls:
    _client: _Client

    async def base_rules(self, repo: str, branch: str) -> frozenset[str]:
        """The types of the rules on `branch` (`merge_queue`, `pull_request`, ...)."""
        try:
            data = await self._client.json("GET", f"/repos/{repo}/rules/branches/{branch}")
        except NotFound:
            return frozenset()
        return frozenset(rule.type for rule in _rules.validate_python(data))

    async def enqueue_pr(self, node_id: str, expected_head: str) -> None:
        """Join the merge queue; `QueueRefused` with GitHub's words if it will not."""
        try:
            await self._client.graphql(ENQUEUE, {"id": node_id, "oid": expected_head})
        except ForgeError as exc:
            if exc.status is not None or not str(exc).startswith("GraphQL:"):
                raise  # a failed request, not GitHub's refusal
            raise QueueRefused(str(exc).removeprefix("GraphQL: ")) from exc


def pull_of_queue_ref(ref: str) -> tuple[int, str] | None:
    """The pull request number and head of a group's ref,
    `[refs/heads/]gh-readonly-queue/{base}/pr-{number}-{head sha}`; None for any other."""
    name = ref.removeprefix("refs/heads/")
    if not name.startswith(QUEUE_REF_PREFIX):
        return None
    number, _, sha = name.rsplit("/", 1)[-1].removeprefix("pr-").partition("-")
    if not number.isdigit() or not sha:
        return None
    return int(number), sha
