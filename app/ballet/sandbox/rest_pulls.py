"""Pull requests: create, read, list, update, merge, update branch, request reviewers.

Reviews and their comments are in rest_reviews."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import events, gitcache, gitrepo, merging, shapes
from ballet.sandbox.auth import require
from ballet.sandbox.errors import ApiError, not_found, unprocessable
from ballet.sandbox.handler import body_of, field, int_param, now, page, repo_for, respond
from ballet.sandbox.pullview import pull_shape
from ballet.sandbox.rest_issues import apply_issue_update
from ballet.sandbox.state import Issue, Pull, Repo


def pull_of(repo: Repo, number: int) -> Pull:
    pr = repo.pulls.get(number)
    if pr is None:
        raise not_found()
    return pr


def _branch(repo: Repo, spec: str, name: str) -> str:
    """`branch` or `owner:branch` (forks do not exist here) naming an existing branch."""
    owner, _, branch = spec.rpartition(":")
    if (owner and owner != repo.owner) or gitcache.branch(repo, branch) is None:
        raise ApiError(
            422,
            "Validation Failed",
            [{"resource": "PullRequest", "field": name, "code": "invalid"}],
        )
    return branch


async def create_pull(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    data = await body_of(request)
    title = field(data, "title", str, required=True)
    head = _branch(repo, field(data, "head", str, required=True), "head")
    base = _branch(repo, field(data, "base", str, required=True), "base")
    for pr in repo.pulls.values():
        if pr.head_ref == head and pr.base_ref == base and repo.issues[pr.number].state == "open":
            raise unprocessable(
                f"A pull request already exists for {repo.owner}:{head}.",
                field="head",
                code="custom",
            )
    head_sha = gitcache.branch(repo, head)
    base_sha = gitcache.branch(repo, base)
    assert head_sha and base_sha
    if gitrepo.is_ancestor(repo.path, head_sha, base_sha):
        raise unprocessable(f"No commits between {base} and {head}", field="head", code="custom")
    moment = now()
    number = max(repo.issues, default=0) + 1
    repo.issues[number] = Issue(
        sb.next_id(),
        number,
        title,
        field(data, "body", str),
        actor.login,
        moment,
        moment,
        is_pull=True,
    )
    sb.references.note(repo.full_name.lower(), "issue", number, repo.issues[number].body)
    repo.pulls[number] = Pull(
        sb.next_id(),
        number,
        head,
        base,
        head_sha,
        draft=bool(field(data, "draft", bool)),
        maintainer_can_modify=field(data, "maintainer_can_modify", bool) is not False,
    )
    events.pull_request(sb, repo, number, "opened", actor.login)
    return respond(pull_shape(sb, repo, number), 201)


async def get_pull(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    return respond(pull_shape(sb, repo, pull_of(repo, int_param(request, "number")).number))


async def list_pulls(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    state = request.query_params.get("state", "open")
    head = request.query_params.get("head")
    base = request.query_params.get("base")
    found = [
        pr.number
        for pr in sorted(repo.pulls.values(), key=lambda p: -p.number)
        if (state == "all" or repo.issues[pr.number].state == state)
        and (head is None or f"{repo.owner}:{pr.head_ref}" == head or pr.head_ref == head)
        and (base is None or pr.base_ref == base)
    ]
    return respond([shapes.pull_list_item(pull_shape(sb, repo, n)) for n in page(request, found)])


async def update_pull(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "read")
    pr = pull_of(repo, int_param(request, "number"))
    if actor.login != repo.issues[pr.number].user:
        require(actor, repo, "write")
    data = await body_of(request)
    base = field(data, "base", str)
    if base is not None and base != pr.base_ref:
        old, pr.base_ref = pr.base_ref, _branch(repo, base, "base")
        events.pull_request(
            sb, repo, pr.number, "edited", actor.login, changes={"base": {"ref": {"from": old}}}
        )
    apply_issue_update(
        sb,
        repo,
        repo.issues[pr.number],
        {k: v for k, v in data.items() if k in ("title", "body", "state")},
        actor,
    )
    return respond(pull_shape(sb, repo, pr.number))


async def merge_pull(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "write")
    pr = pull_of(repo, int_param(request, "number"))
    data = await body_of(request)
    method = field(data, "merge_method", str) or "merge"
    if method not in ("merge", "squash", "rebase"):
        raise unprocessable(
            f"{method} is not a merge method: use merge, squash or rebase", field="merge_method"
        )
    sha = await merging.merge(
        sb,
        repo,
        pr,
        method,
        field(data, "sha", str),
        field(data, "commit_title", str),
        field(data, "commit_message", str),
        actor,
    )
    return respond({"sha": sha, "merged": True, "message": "Pull Request successfully merged"})


async def update_branch(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "write")
    pr = pull_of(repo, int_param(request, "number"))
    data = await body_of(request)
    await merging.update_branch(sb, repo, pr, field(data, "expected_head_sha", str), actor)
    return respond(
        {
            "message": "Updating pull request branch.",
            "url": f"{shapes.repo_html(sb, repo)}/pull/{pr.number}",
        },
        202,
    )


async def request_reviewers(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "triage")
    pr = pull_of(repo, int_param(request, "number"))
    reviewers = field(await body_of(request), "reviewers", list) or []
    for login in reviewers:
        if not isinstance(login, str) or (login not in repo.collaborators and login != repo.owner):
            raise unprocessable(
                f"Reviews may only be requested from collaborators. {login} is not a collaborator.",
                field="reviewers",
            )
        if login == repo.issues[pr.number].user:
            raise unprocessable(
                "Review cannot be requested from pull request author.", field="reviewers"
            )
    for login in reviewers:
        if login not in pr.requested_reviewers:
            pr.requested_reviewers.append(login)
            events.pull_request(
                sb,
                repo,
                pr.number,
                "review_requested",
                actor.login,
                requested_reviewer=shapes.user(sb, login),
            )
    return respond(pull_shape(sb, repo, pr.number), 201)


async def list_files(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    pr = pull_of(repo, int_param(request, "number"))
    base = gitcache.branch(repo, pr.base_ref) or pr.head_sha
    files = [
        shapes.diff_entry(sb, repo, change, pr.head_sha)
        for change in gitcache.changed_files(repo, base, pr.head_sha)
    ]
    return respond(page(request, files))


_PULL = "/repos/{owner}/{repo}/pulls/{number}"
ROUTES = [
    Route("/repos/{owner}/{repo}/pulls", create_pull, methods=["POST"]),
    Route("/repos/{owner}/{repo}/pulls", list_pulls),
    Route(_PULL, get_pull),
    Route(_PULL, update_pull, methods=["PATCH"]),
    Route(_PULL + "/files", list_files),
    Route(_PULL + "/merge", merge_pull, methods=["PUT"]),
    Route(_PULL + "/update-branch", update_branch, methods=["PUT"]),
    Route(_PULL + "/requested_reviewers", request_reviewers, methods=["POST"]),
]
