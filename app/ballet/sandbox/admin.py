"""The sandbox's own API under `/_sandbox/`: make repositories, read what happened.

Not GitHub: it is how tests, benchmarks and the demo set the stage and look
at the result as a person would see it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ballet.sandbox import events, gitcache, gitrepo, pushes, shapes
from ballet.sandbox.errors import ApiError, not_found
from ballet.sandbox.faults import Faults, FaultSpec
from ballet.sandbox.handler import int_param, now, respond, sandbox_of
from ballet.sandbox.state import CheckRun, CheckSuite, Repo

NAME = r"^[A-Za-z0-9_.-]+$"
MergeMethod = Literal["merge", "squash", "rebase"]
ALL_METHODS: tuple[MergeMethod, ...] = ("merge", "squash", "rebase")


class CiSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: list[str] = Field(min_length=1)


class NewRepo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    owner: str = Field(pattern=NAME)
    name: str = Field(pattern=NAME)
    default_branch: str = Field(default="main", pattern=r"^[A-Za-z0-9_./-]+$")
    files: dict[str, str] = Field(default_factory=lambda: {"README.md": "# sandbox\n"})
    collaborators: dict[str, Literal["read", "triage", "write", "maintain", "admin"]] = Field(
        default_factory=dict
    )
    ci: CiSpec | None = None
    merge_methods: list[MergeMethod] = Field(
        default_factory=lambda: list(ALL_METHODS), min_length=1
    )
    delete_branch_on_merge: bool = False
    private: bool = False


async def create_repo(request: Request) -> JSONResponse:
    sb = sandbox_of(request)
    try:
        spec = NewRepo.model_validate_json(await request.body())
    except ValidationError as exc:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()
        ]
        raise ApiError(422, "Invalid repository: fix the fields listed in errors", errors) from exc
    if sb.repo(spec.owner, spec.name) is not None:
        raise ApiError(
            422,
            f"Repository {spec.owner}/{spec.name} already exists",
            [{"field": "name", "code": "already_exists"}],
        )
    new_installation = spec.owner not in sb.installations
    path = sb.data_dir / spec.owner / f"{spec.name}.git"
    if path.exists():
        # State lives in memory only: a repository left by an earlier run cannot be adopted,
        # and overwriting it could lose work.
        raise ApiError(
            422,
            f"{path} exists from an earlier run; start the sandbox with a fresh --data directory",
            [{"field": "name", "code": "already_exists"}],
        )
    gitrepo.init_bare(path, spec.default_branch)
    repo = Repo(
        id=sb.next_id(),
        owner=spec.owner,
        name=spec.name,
        default_branch=spec.default_branch,
        path=path,
        created_at=now(),
        collaborators=dict(spec.collaborators),
        installation_id=sb.installation_for(spec.owner),
        ci_command=spec.ci.command if spec.ci else None,
        merge_methods=tuple(spec.merge_methods),
        delete_branch_on_merge=spec.delete_branch_on_merge,
        private=spec.private,
    )
    sb.repos[repo.full_name.lower()] = repo
    events.installed(sb, repo, new_installation)
    files = spec.files or {"README.md": f"# {spec.name}\n"}
    sha = gitrepo.commit_files(path, files, "Initial commit", [])
    ref = f"refs/heads/{spec.default_branch}"
    async with repo.ref_lock:
        gitrepo.update_ref(path, ref, sha)
        pushes.ref_moved(sb, repo, ref, gitrepo.ZERO_SHA, sha, repo.owner)
    return respond(
        {
            "full_name": repo.full_name,
            "clone_url": shapes.clone_url(sb, repo),
            "html_url": shapes.repo_html(sb, repo),
            "default_branch": repo.default_branch,
            "head_sha": sha,
            "installation_id": repo.installation_id,
            "private": repo.private,
        },
        201,
    )


async def list_deliveries(request: Request) -> JSONResponse:
    return respond([d.summary() for d in sandbox_of(request).hooks.log])


async def get_delivery(request: Request) -> JSONResponse:
    """One delivery with its headers' worth of facts and the payload as it was sent."""
    delivery = sandbox_of(request).hooks.get(int_param(request, "delivery_id"))
    if delivery is None:
        raise not_found()
    return respond({**delivery.summary(), "payload": json.loads(delivery.body)})


async def redeliver(request: Request) -> JSONResponse:
    again = sandbox_of(request).hooks.redeliver(int_param(request, "delivery_id"))
    if again is None:
        raise not_found()
    return respond(again.summary(), 202)


async def set_webhook(request: Request) -> JSONResponse:
    """Point deliveries somewhere else (the demo starts Ballet's web app after the sandbox)."""
    try:
        url = json.loads(await request.body())["url"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(422, 'Send {"url": "http://host:port/path"} (or null to stop)') from exc
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise ApiError(422, f"{url!r} is not an http(s) URL")
    sandbox_of(request).hooks.url = url
    return respond({"url": url})


async def show_webhook(request: Request) -> JSONResponse:
    """Where deliveries go and how far behind their posting is (a bench's progress)."""
    hooks = sandbox_of(request).hooks
    return respond({"url": hooks.url, "waiting": hooks.waiting(), "deliveries": len(hooks.log)})


async def list_requests(request: Request) -> JSONResponse:
    return respond(sandbox_of(request).requests)


async def settle(request: Request) -> JSONResponse:
    """Wait until CI runs have finished and every queued webhook has been posted."""
    sb = sandbox_of(request)
    # A push whose answer went out is still being taken in (its webhooks and CI are
    # yet to be queued) while it holds its repository's ref lock.
    for repo in list(sb.repos.values()):
        async with repo.ref_lock:
            pass
    while sb.tasks:
        await asyncio.gather(*list(sb.tasks), return_exceptions=True)
    await sb.hooks.idle()
    return respond({"deliveries": len(sb.hooks.log)})


async def repo_state(request: Request) -> JSONResponse:
    """A repository as a person would see it, flattened for assertions."""
    sb = sandbox_of(request)
    repo = sb.repo(request.path_params["owner"], request.path_params["repo"])
    if repo is None:
        raise not_found()
    branches = {
        ref.removeprefix("refs/heads/"): sha
        for ref, sha in gitcache.refs(repo).items()
        if ref.startswith("refs/heads/")
    }
    return respond(
        {
            "branches": branches,
            "labels": sorted(repo.labels),
            "issues": [
                {
                    "number": i.number,
                    "title": i.title,
                    "body": i.body,
                    "user": i.user,
                    "state": i.state,
                    "labels": i.labels,
                    "is_pull": i.is_pull,
                }
                for i in repo.issues.values()
            ],
            "comments": [
                {
                    "id": c.id,
                    "issue": c.issue_number,
                    "user": c.user,
                    "body": c.body,
                    "reactions": [{"user": u, "content": r} for _, u, r in c.reactions],
                }
                for c in repo.comments.values()
            ],
            "pulls": [
                {
                    "number": p.number,
                    "head": p.head_ref,
                    "base": p.base_ref,
                    "head_sha": p.head_sha,
                    "draft": p.draft,
                    "merged": p.merged,
                    "merge_commit_sha": p.merge_commit_sha,
                    "requested_reviewers": p.requested_reviewers,
                }
                for p in repo.pulls.values()
            ],
            "reviews": [
                {
                    "id": r.id,
                    "pull": r.pull_number,
                    "user": r.user,
                    "state": r.state,
                    "body": r.body,
                    "commit_id": r.commit_id,
                }
                for r in repo.reviews.values()
            ],
            "review_comments": [
                {
                    "id": c.id,
                    "pull": c.pull_number,
                    "review": c.review_id,
                    "user": c.user,
                    "path": c.path,
                    "line": c.line,
                    "side": c.side,
                    "body": c.body,
                    "in_reply_to": c.in_reply_to_id,
                }
                for c in repo.review_comments.values()
            ],
            "check_runs": [
                {
                    "id": r.id,
                    "name": r.name,
                    "head_sha": r.head_sha,
                    "status": r.status,
                    "conclusion": r.conclusion,
                    "output": r.output,
                    "annotations": r.annotations,
                    "details_url": r.details_url,
                }
                for r in repo.runs.values()
            ],
            "statuses": [
                {
                    "sha": s.sha,
                    "context": s.context,
                    "state": s.state,
                    "description": s.description,
                    "target_url": s.target_url,
                }
                for s in repo.statuses
            ],
        }
    )


async def delete_user(request: Request) -> Response:
    """The account is gone: its comments now show `"user": null`, as GitHub's do."""
    sandbox_of(request).deleted_users.add(request.path_params["login"])
    return Response(status_code=204)


class ForeignAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    annotation_level: Literal["notice", "warning", "failure"] = "failure"
    message: str
    title: str | None = None
    raw_details: str | None = None
    start_column: int | None = None
    end_column: int | None = None


class ForeignOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    summary: str
    text: str | None = None
    # As many as a test needs: GitHub's 50 a request bounds one App's request, not a run.
    annotations: list[ForeignAnnotation] = Field(default_factory=list)


class ForeignCheckRun(BaseModel):
    """A check run of another App (the repository's CI), in any status GitHub documents,
    including the GitHub Actions ones Ballet itself never creates; with `output`, what
    it says (title, summary, text, annotations)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    head_sha: str = Field(pattern=r"^[0-9a-f]{40}$")
    status: Literal["queued", "in_progress", "completed", "waiting", "requested", "pending"]
    conclusion: str | None = None
    details_url: str | None = None
    output: ForeignOutput | None = None


async def create_foreign_check_run(request: Request) -> JSONResponse:
    sb = sandbox_of(request)
    repo = sb.repo(request.path_params["owner"], request.path_params["repo"])
    if repo is None:
        raise not_found()
    try:
        spec = ForeignCheckRun.model_validate_json(await request.body())
    except ValidationError as exc:
        raise ApiError(422, f"Invalid check run: {exc.errors()[0]['msg']}") from exc
    if gitcache.commit(repo, spec.head_sha) is None:
        raise ApiError(422, f"No commit found for SHA: {spec.head_sha}")
    moment = now()
    suite = CheckSuite(sb.next_id(), spec.head_sha, None, None, moment, moment, origin="ci")
    suite.status = "completed" if spec.status == "completed" else "queued"
    suite.conclusion = spec.conclusion
    run = CheckRun(sb.next_id(), suite.id, spec.name, spec.head_sha, moment, status=spec.status)
    run.conclusion, run.details_url = spec.conclusion, spec.details_url
    if spec.status == "completed":
        run.completed_at = moment
    if spec.output is not None:
        run.output = spec.output.model_dump(include={"title", "summary", "text"})
        run.annotations = [a.model_dump() for a in spec.output.annotations]
    repo.suites[suite.id] = suite
    repo.runs[run.id] = run
    # Announced as the CI's own runs are, so a test's failing CI reaches Ballet.
    events.check_run(sb, repo, run, "created")
    if spec.status == "completed":
        events.check_run(sb, repo, run, "completed")
        events.check_suite(sb, repo, suite, "completed")
    return respond({"id": run.id}, 201)


async def start_faults(request: Request) -> JSONResponse:
    """`{"rate", "kinds", "seed"}`: fail that share of the App's requests from now on."""
    try:
        spec = FaultSpec.model_validate_json(await request.body())
    except ValidationError as exc:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()
        ]
        raise ApiError(
            422,
            'Send {"rate": 0.2, "kinds": ["502", "secondary_rate_limit", "timeout"], "seed": 1}',
            errors,
        ) from exc
    sb = sandbox_of(request)
    sb.faults = Faults.start(spec)
    return respond(sb.faults.summary(), 201)


async def stop_faults(request: Request) -> JSONResponse:
    """End the fault plan; says how many faults of each kind it injected."""
    sb = sandbox_of(request)
    was, sb.faults = sb.faults, None
    return respond(was.summary() if was is not None else {"injected": {}})


async def show_faults(request: Request) -> JSONResponse:
    faults = sandbox_of(request).faults
    return respond(faults.summary() if faults is not None else None)


ROUTES = [
    Route("/_sandbox/faults", start_faults, methods=["POST"]),
    Route("/_sandbox/faults", stop_faults, methods=["DELETE"]),
    Route("/_sandbox/faults", show_faults, methods=["GET"]),
    Route("/_sandbox/users/{login}", delete_user, methods=["DELETE"]),
    Route("/_sandbox/repos/{owner}/{repo}/check-runs", create_foreign_check_run, methods=["POST"]),
    Route("/_sandbox/repos", create_repo, methods=["POST"]),
    Route("/_sandbox/repos/{owner}/{repo}/state", repo_state),
    Route("/_sandbox/deliveries", list_deliveries),
    Route("/_sandbox/deliveries/{delivery_id}", get_delivery),
    Route("/_sandbox/deliveries/{delivery_id}/redeliver", redeliver, methods=["POST"]),
    Route("/_sandbox/requests", list_requests),
    Route("/_sandbox/webhook", set_webhook, methods=["PUT"]),
    Route("/_sandbox/webhook", show_webhook, methods=["GET"]),
    Route("/_sandbox/settle", settle, methods=["POST"]),
]
