"""`GET /repos/{owner}/{repo}/compare/{base}...{head}`: how two commits stand, as GitHub
says it.

`status` is the head's against the base: `ahead` (commits the base has not, none
missing), `behind`, `diverged` or `identical`; `ahead_by` and `behind_by` count them and
`merge_base_commit` is where the two parted. Each side is a branch, tag or sha of the
repository (`owner:ref` of its own owner too); anything else is GitHub's 404. `commits`
are the head's own, oldest first, paged as GitHub pages them (`per_page` up to 250);
`files`, what the head changed since the merge base. Ballet asks it how far a pull
request's head is behind its base where GitHub's `blocked` hides that
(tickets/mergeability.py).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import gitcache, gitrepo, shapes
from ballet.sandbox.errors import not_found, unprocessable
from ballet.sandbox.handler import repo_for, respond
from ballet.sandbox.state import Repo, Sandbox

MAX_PER_PAGE = 250


def _side(repo: Repo, spec: str) -> str:
    owner, colon, ref = spec.rpartition(":")
    if colon and owner != repo.owner:
        raise not_found()  # another fork's branch: the sandbox has no forks
    sha = gitcache.commit(repo, ref) if ref else None
    if sha is None:
        raise not_found()
    return sha


def _status(ahead: int, behind: int) -> str:
    if ahead and behind:
        return "diverged"
    return "ahead" if ahead else "behind" if behind else "identical"


def _page(request: Request) -> tuple[int, int]:
    try:
        per_page = min(max(int(request.query_params.get("per_page", MAX_PER_PAGE)), 1), 250)
        number = max(int(request.query_params.get("page", 1)), 1)
    except ValueError as exc:
        raise unprocessable("per_page and page must be integers", field="per_page") from exc
    return (number - 1) * per_page, number * per_page


def comparison(sb: Sandbox, repo: Repo, basehead: str, span: tuple[int, int]) -> shapes.JSON:
    base_spec, dots, head_spec = basehead.partition("...")
    if not dots:
        raise not_found()
    base, head = _side(repo, base_spec), _side(repo, head_spec)
    merge_base = gitrepo.merge_base(repo.path, base, head)
    if merge_base is None:
        raise not_found()  # GitHub: "No common ancestor between ... and ..."
    own = gitrepo.commits_between(repo.path, base, head)
    behind_by = gitcache.commits_between(repo, head, base)
    html = shapes.repo_html(sb, repo)
    files = [
        shapes.diff_entry(sb, repo, change, head)
        for change in gitcache.changed_files(repo, base, head)
    ]
    return {
        "url": f"{shapes.repo_api(sb, repo)}/compare/{basehead}",
        "html_url": f"{html}/compare/{basehead}",
        "permalink_url": f"{html}/compare/{repo.owner}:{base}...{repo.owner}:{head}",
        "diff_url": f"{html}/compare/{basehead}.diff",
        "patch_url": f"{html}/compare/{basehead}.patch",
        "base_commit": shapes.commit(sb, repo, gitcache.commit_info(repo, base)),
        "merge_base_commit": shapes.commit(sb, repo, gitcache.commit_info(repo, merge_base)),
        "status": _status(len(own), behind_by),
        "ahead_by": len(own),
        "behind_by": behind_by,
        "total_commits": len(own),
        "commits": [shapes.commit(sb, repo, info) for info in own[span[0] : span[1]]],
        "files": files,
    }


async def compare(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    return respond(comparison(sb, repo, request.path_params["basehead"], _page(request)))


ROUTES = [Route("/repos/{owner}/{repo}/compare/{basehead:path}", compare)]
