"""The corners of GitHub's GraphQL API that have no REST call: draft ↔ ready for
review, the merge queue and auto-merge.

`markPullRequestReadyForReview(input: {pullRequestId})` (or the reverse,
`convertPullRequestToDraft`); `enqueuePullRequest(input: {pullRequestId,
expectedHeadOid?})` and `dequeuePullRequest(input: {id})` (merge_queue.py), which
answer with the `mergeQueueEntry`; `enablePullRequestAutoMerge(input: {pullRequestId,
expectedHeadOid?, mergeMethod?, commitHeadline?, commitBody?})` and
`disablePullRequestAutoMerge(input: {pullRequestId})` (auto_merge.py), which answer
with the `pullRequest` and its `autoMergeRequest`. The pull request's id is its REST `node_id`,
given inline or as a variable. Any other query is refused with a GraphQL error.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import auto_merge, events, merge_queue, shapes
from ballet.sandbox.auth import can_see, require
from ballet.sandbox.errors import ApiError
from ballet.sandbox.handler import actor_of, body_of, now, respond, sandbox_of
from ballet.sandbox.shapes import node_id
from ballet.sandbox.state import Pull, Repo, Sandbox
from ballet.sandbox.token_scope import check_named

DRAFT_MUTATIONS = {"markPullRequestReadyForReview": False, "convertPullRequestToDraft": True}
# Each mutation's input field naming the pull request.
MUTATIONS = {
    **dict.fromkeys(DRAFT_MUTATIONS, "pullRequestId"),
    "enqueuePullRequest": "pullRequestId",
    "dequeuePullRequest": "id",
    "enablePullRequestAutoMerge": "pullRequestId",
    "disablePullRequestAutoMerge": "pullRequestId",
}
AUTO_MERGE_MUTATIONS = ("enablePullRequestAutoMerge", "disablePullRequestAutoMerge")


def _error(message: str) -> JSONResponse:
    return respond({"data": None, "errors": [{"type": "UNPROCESSABLE", "message": message}]})


def _find(sb: Sandbox, pull_node_id: str) -> tuple[Repo, Pull] | None:
    for repo in sb.repos.values():
        for pr in repo.pulls.values():
            if node_id("PullRequest", pr.id) == pull_node_id:
                return repo, pr
    return None


def _argument(query: str, variables: dict[str, Any], name: str) -> str | None:
    """An input field's string: inline, as a `$variable`, or in an `input` variable."""
    inline = re.search(rf'(?<![\w$]){name}\s*:\s*"([^"]+)"', query)
    if inline:
        return inline.group(1)
    variable = re.search(rf"(?<![\w$]){name}\s*:\s*\$(\w+)", query)
    if variable and isinstance(variables.get(variable.group(1)), str):
        return str(variables[variable.group(1)])
    nested = variables.get("input")
    if isinstance(nested, dict) and isinstance(nested.get(name), str):
        return str(nested[name])
    return None


async def graphql(request: Request) -> JSONResponse:
    sb = sandbox_of(request)
    actor = actor_of(request)
    if actor.kind == "anonymous":
        raise ApiError(401, "This endpoint requires you to be authenticated.")
    data = await body_of(request)
    query = data.get("query")
    variables = data.get("variables") or {}
    if not isinstance(query, str) or not isinstance(variables, dict):
        return _error("A query string (and optional variables object) is required")
    mutation = next((name for name in MUTATIONS if name in query), None)
    if mutation is None:
        return _error(f"The sandbox supports only these GraphQL mutations: {', '.join(MUTATIONS)}")
    pull_id = _argument(query, variables, MUTATIONS[mutation])
    found = _find(sb, pull_id) if pull_id else None
    if found is None or not can_see(actor, found[0]):
        return _error(f"Could not resolve to a node with the global id of '{pull_id}'")
    repo, pr = found
    require(actor, repo, "write")
    # GitHub's merge queue asks for the permission a merge does; a draft's state, the PR's.
    check_named(actor, "pull_requests" if mutation in DRAFT_MUTATIONS else "contents", "write")
    if mutation in AUTO_MERGE_MUTATIONS:
        return _auto_merge_mutation(sb, repo, pr, mutation, query, variables, actor.login)
    if mutation not in DRAFT_MUTATIONS:
        return await _queue_mutation(sb, repo, pr, mutation, query, variables, actor.login)
    draft = DRAFT_MUTATIONS[mutation]
    if pr.draft != draft:
        pr.draft = draft
        repo.issues[pr.number].updated_at = now()
        action = "converted_to_draft" if draft else "ready_for_review"
        events.pull_request(sb, repo, pr.number, action, actor.login)
    pull = {"id": node_id("PullRequest", pr.id), "number": pr.number, "isDraft": pr.draft}
    return respond({"data": {mutation: {"pullRequest": pull}}})


async def _queue_mutation(
    sb: Sandbox,
    repo: Repo,
    pr: Pull,
    mutation: str,
    query: str,
    variables: dict[str, Any],
    sender: str,
) -> JSONResponse:
    try:
        if mutation == "enqueuePullRequest":
            expected = _argument(query, variables, "expectedHeadOid")
            entry = await merge_queue.enqueue(sb, repo, pr, expected, sender)
        else:
            entry = await merge_queue.dequeue(sb, repo, pr, sender)
    except merge_queue.QueueRefusal as refusal:
        return _error(str(refusal))
    queued = entry in repo.merge_queue
    state = "AWAITING_CHECKS" if entry.group_sha else "QUEUED" if queued else "MERGEABLE"
    shape = {
        "id": node_id("MergeQueueEntry", entry.id),
        "position": merge_queue.position(repo, entry) if queued else 0,
        "state": state,
        "enqueuedAt": shapes.iso(entry.enqueued_at),
        "headCommit": {"oid": entry.head_sha},
        "pullRequest": {"id": node_id("PullRequest", pr.id), "number": pr.number},
    }
    return respond({"data": {mutation: {"mergeQueueEntry": shape}}})


def _auto_merge_mutation(
    sb: Sandbox,
    repo: Repo,
    pr: Pull,
    mutation: str,
    query: str,
    variables: dict[str, Any],
    sender: str,
) -> JSONResponse:
    def arg(name: str) -> str | None:
        enum = re.search(rf"(?<![\w$]){name}\s*:\s*([A-Z_]+)\b", query)  # mergeMethod: SQUASH
        return _argument(query, variables, name) or (enum.group(1) if enum else None)

    try:
        if mutation == "enablePullRequestAutoMerge":
            given = (arg("expectedHeadOid"), arg("mergeMethod"), arg("commitHeadline"))
            auto_merge.enable(sb, repo, pr, *given, arg("commitBody"), sender)
        else:
            auto_merge.disable(sb, repo, pr, sender, f"Auto-merge was disabled by {sender}")
    except auto_merge.AutoMergeRefusal as refusal:
        return _error(str(refusal))
    auto = pr.auto_merge
    request = None
    if auto is not None:
        request = {
            "enabledAt": shapes.iso(now()),
            "enabledBy": {"login": auto.enabled_by},
            "mergeMethod": auto.merge_method.upper(),
            "commitHeadline": auto.commit_title,
            "commitBody": auto.commit_message,
        }
    pull = {"id": node_id("PullRequest", pr.id), "number": pr.number, "autoMergeRequest": request}
    return respond({"data": {mutation: {"pullRequest": pull}}})


ROUTES = [Route("/graphql", graphql, methods=["POST"])]
