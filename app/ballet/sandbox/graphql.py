"""The one corner of GitHub's GraphQL API that Ballet needs: draft ↔ ready for review.

GitHub offers no REST call to mark a pull request ready, so the adapter sends
`markPullRequestReadyForReview(input: {pullRequestId})` (or the reverse,
`convertPullRequestToDraft`). The pull request's id is its REST `node_id`,
given inline or as a variable. Any other query is refused with a GraphQL error.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import events
from ballet.sandbox.auth import can_see, require
from ballet.sandbox.errors import ApiError
from ballet.sandbox.handler import actor_of, body_of, now, respond, sandbox_of
from ballet.sandbox.shapes import node_id
from ballet.sandbox.state import Pull, Repo, Sandbox

MUTATIONS = {"markPullRequestReadyForReview": False, "convertPullRequestToDraft": True}
_INLINE_ID = re.compile(r'pullRequestId\s*:\s*"([^"]+)"')
_VARIABLE_ID = re.compile(r"pullRequestId\s*:\s*\$(\w+)")


def _error(message: str) -> JSONResponse:
    return respond({"data": None, "errors": [{"type": "UNPROCESSABLE", "message": message}]})


def _find(sb: Sandbox, pull_node_id: str) -> tuple[Repo, Pull] | None:
    for repo in sb.repos.values():
        for pr in repo.pulls.values():
            if node_id("PullRequest", pr.id) == pull_node_id:
                return repo, pr
    return None


def _pull_id(query: str, variables: dict[str, Any]) -> str | None:
    inline = _INLINE_ID.search(query)
    if inline:
        return inline.group(1)
    variable = _VARIABLE_ID.search(query)
    if variable and isinstance(variables.get(variable.group(1)), str):
        return str(variables[variable.group(1)])
    nested = variables.get("input")
    if isinstance(nested, dict) and isinstance(nested.get("pullRequestId"), str):
        return str(nested["pullRequestId"])
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
    pull_id = _pull_id(query, variables)
    found = _find(sb, pull_id) if pull_id else None
    if found is None or not can_see(actor, found[0]):
        return _error(f"Could not resolve to a node with the global id of '{pull_id}'")
    repo, pr = found
    require(actor, repo, "write")
    draft = MUTATIONS[mutation]
    if pr.draft != draft:
        pr.draft = draft
        repo.issues[pr.number].updated_at = now()
        action = "converted_to_draft" if draft else "ready_for_review"
        events.pull_request(sb, repo, pr.number, action, actor.login)
    pull = {"id": node_id("PullRequest", pr.id), "number": pr.number, "isDraft": pr.draft}
    return respond({"data": {mutation: {"pullRequest": pull}}})


ROUTES = [Route("/graphql", graphql, methods=["POST"])]
