"""A repository's pull-request settings: which merge methods it allows, whether it
allows auto-merge and whether it deletes head branches once merged, changed as on GitHub with
`PATCH /repos/{owner}/{repo}` (admins only)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import shapes
from ballet.sandbox.errors import unprocessable
from ballet.sandbox.handler import body_of, field, repo_for, respond
from ballet.sandbox.state import MERGE_METHODS

# GitHub's setting for each merge method, in MERGE_METHODS' order.
ALLOW_FIELDS = ("allow_merge_commit", "allow_squash_merge", "allow_rebase_merge")
# GitHub's words when a merge names a method the repository does not allow.
REFUSALS = {
    "merge": "Merge commits are not allowed on this repository.",
    "squash": "Squash merges are not allowed on this repository.",
    "rebase": "Rebase merges are not allowed on this repository.",
}


async def update_repo(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "admin")
    data = await body_of(request)
    allowed = dict(
        zip(MERGE_METHODS, (m in repo.merge_methods for m in MERGE_METHODS), strict=True)
    )
    for method, name in zip(MERGE_METHODS, ALLOW_FIELDS, strict=True):
        value = field(data, name, bool)
        if value is not None:
            allowed[method] = value
    if not any(allowed.values()):
        raise unprocessable(
            "Sorry, you need to allow at least one merge strategy. (no_merge_method)",
            field="merge_commit_allowed",
        )
    repo.merge_methods = tuple(m for m in MERGE_METHODS if allowed[m])
    delete = field(data, "delete_branch_on_merge", bool)
    if delete is not None:
        repo.delete_branch_on_merge = delete
    auto = field(data, "allow_auto_merge", bool)
    if auto is not None:
        repo.allow_auto_merge = auto
    return respond(shapes.repository(sb, repo))


ROUTES = [Route("/repos/{owner}/{repo}", update_repo, methods=["PATCH"])]
