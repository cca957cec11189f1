"""GitHub's auto-merge: the calls of `GitHubForge` that turn it on and off (kept here
so the adapter's module stays short), and the webhook Ballet reads of it.

GraphQL `enablePullRequestAutoMerge` with `expectedHeadOid`, the head a person
approved, so a head that moved meanwhile is refused rather than merged unapproved;
GitHub refuses too where the repository does not allow auto-merge and where nothing
holds the pull request back ("Pull request Pull request is in clean status": it can
merge now). `pull_request.auto_merge_disabled` says GitHub turned it off before it
merged, with its reason; Ballet's own turning off is not news to the ticket.
"""

from __future__ import annotations

from typing import Any, Protocol

from ballet.core.events import AutoMergeDisabled
from ballet.github.errors import ForgeError
from ballet.github.intents import ForTicket, Ignored, Intent
from ballet.github.readers import Context, by_ballet, login_of, pr_target

ENABLE = (
    "mutation($id: ID!, $oid: GitObjectID, $method: PullRequestMergeMethod, $title: String)"
    " { enablePullRequestAutoMerge(input: {pullRequestId: $id, expectedHeadOid: $oid,"
    " mergeMethod: $method, commitHeadline: $title}) { clientMutationId } }"
)
DISABLE = (
    "mutation($id: ID!) { disablePullRequestAutoMerge(input: {pullRequestId: $id})"
    " { clientMutationId } }"
)
# GitHub's words for a pull request that can merge now: merge it instead.
MERGEABLE_NOW = ("is in clean status", "is in unstable status")


class _Client(Protocol):
    async def graphql(self, query: str, variables: dict[str, Any]) -> None: ...


class AutoMergeRefused(ForgeError):
    """GitHub would not turn auto-merge on; GitHub's words."""

    @property
    def mergeable_now(self) -> bool:
        return any(words in str(self) for words in MERGEABLE_NOW)


class AutoMergeCalls:
    _client: _Client

    async def enable_auto_merge(
        self, node_id: str, expected_head: str, method: str, commit_title: str | None
    ) -> None:
        variables = {"id": node_id, "oid": expected_head, "method": method.upper()}
        try:
            await self._client.graphql(ENABLE, variables | {"title": commit_title})
        except ForgeError as exc:
            if exc.status is not None or not str(exc).startswith("GraphQL:"):
                raise  # a failed request, not GitHub's refusal
            raise AutoMergeRefused(str(exc).removeprefix("GraphQL: ")) from exc

    async def disable_auto_merge(self, node_id: str) -> None:
        try:
            await self._client.graphql(DISABLE, {"id": node_id})
        except ForgeError as exc:
            if exc.status is not None or "not enabled" not in str(exc):
                raise  # off already: what was asked for


def auto_merge_disabled(c: Context) -> tuple[Intent, ...]:
    target = pr_target(c)
    if target is None:
        return (Ignored("pull_request.auto_merge_disabled without a pull request number"),)
    if by_ballet(c.env.sender, None, c.app):
        return (Ignored("Ballet turned auto-merge off itself"),)
    by = login_of(c.env.sender)
    event = AutoMergeDisabled(now=c.now, reason=c.payload.reason or "", by=by)
    return (ForTicket(c.installation_id, target, event),)
