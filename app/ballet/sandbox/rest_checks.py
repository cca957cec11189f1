"""Check runs, check suites and commit statuses."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox import events, gitcache, shapes
from ballet.sandbox.errors import ApiError, forbidden, not_found, unprocessable
from ballet.sandbox.handler import body_of, field, int_param, now, page, repo_for, respond
from ballet.sandbox.state import CheckRun, CheckSuite, CommitStatus, Repo, Sandbox

STATUSES = ("queued", "in_progress", "completed")
CONCLUSIONS = (
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "stale",
    "timed_out",
)
STATUS_STATES = ("error", "failure", "pending", "success")
ANNOTATION_LEVELS = ("notice", "warning", "failure")
# GitHub takes at most 50 annotations per request and adds them to the run's.
MAX_ANNOTATIONS = 50


def _sha_of(repo: Repo, ref: str) -> str:
    sha = gitcache.commit(repo, ref)
    if sha is None:
        raise ApiError(422, f"No commit found for SHA: {ref}")
    return sha


def _suite_for(sb: Sandbox, repo: Repo, sha: str) -> CheckSuite:
    """The App's suite for a commit: check runs the App creates are grouped under it."""
    for suite in repo.suites.values():
        if suite.head_sha == sha and suite.origin == "app":
            return suite
    moment = now()
    suite = CheckSuite(sb.next_id(), sha, None, None, moment, moment)
    repo.suites[suite.id] = suite
    return suite


def _apply_run_fields(run: CheckRun, data: dict[str, Any], *, creating: bool) -> None:
    """Check the whole request, then change the run: a refused update changes nothing."""
    status = field(data, "status", str)
    conclusion = field(data, "conclusion", str)
    if status is not None and status not in STATUSES:
        raise unprocessable(f"{status} is not a check run status", field="status")
    if conclusion is not None and conclusion not in CONCLUSIONS:
        raise unprocessable(f"{conclusion} is not a check run conclusion", field="conclusion")
    if status == "completed" and conclusion is None and run.conclusion is None:
        raise unprocessable(
            "A completed check run needs a conclusion", field="conclusion", code="missing_field"
        )
    output = _output(run, field(data, "output", dict), creating)
    run.status = "completed" if conclusion else (status or run.status)
    run.conclusion = conclusion or run.conclusion
    if run.status == "completed" and run.completed_at is None:
        run.completed_at = now()
    run.name = field(data, "name", str) or run.name
    run.details_url = field(data, "details_url", str) or run.details_url
    run.external_id = field(data, "external_id", str) or run.external_id
    if output is not None:
        run.output, added = output
        run.annotations.extend(added)


def _output(
    run: CheckRun, output: dict[str, Any] | None, creating: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The run's new title, summary and text, and the annotations to add to its own."""
    if output is None:
        return None
    added = [_annotation(item) for item in field(output, "annotations", list) or []]
    if len(added) > MAX_ANNOTATIONS:
        raise unprocessable(
            f"Only {MAX_ANNOTATIONS} annotations may be sent per request", field="annotations"
        )
    # An update may leave the title out (GitHub requires it only to create), keeping it.
    title = field(output, "title", str, required=creating) or run.output.get("title")
    shown = {
        "title": title,
        "summary": field(output, "summary", str, required=True),
        "text": field(output, "text", str),
    }
    return shown, added


def _annotation(item: Any) -> dict[str, Any]:
    """One annotation as GitHub takes it: the five fields it requires, the level one
    of three, and columns only on an annotation of a single line."""
    if not isinstance(item, dict):
        raise unprocessable("Each annotation must be an object", field="annotations")
    kept = {
        "path": field(item, "path", str, required=True),
        "start_line": field(item, "start_line", int, required=True),
        "end_line": field(item, "end_line", int, required=True),
        "annotation_level": field(item, "annotation_level", str, required=True),
        "message": field(item, "message", str, required=True),
        "title": field(item, "title", str),
        "raw_details": field(item, "raw_details", str),
        "start_column": field(item, "start_column", int),
        "end_column": field(item, "end_column", int),
    }
    if kept["annotation_level"] not in ANNOTATION_LEVELS:
        raise unprocessable(
            f"{kept['annotation_level']} is not an annotation level: use notice, warning or "
            "failure",
            field="annotation_level",
        )
    if kept["end_line"] < kept["start_line"]:
        raise unprocessable("end_line must not precede start_line", field="end_line")
    columns = kept["start_column"] is not None or kept["end_column"] is not None
    if columns and kept["start_line"] != kept["end_line"]:
        raise unprocessable(
            "start_column and end_column are only allowed when start_line equals end_line",
            field="start_column",
        )
    return kept


def _require_app(request: Request) -> tuple[Sandbox, Repo]:
    sb, repo, actor = repo_for(request, "read")
    if actor.kind != "installation":
        raise forbidden("Only GitHub Apps can create and update check runs")
    return sb, repo


def _settle_suite(sb: Sandbox, repo: Repo, suite: CheckSuite) -> None:
    """Complete the suite once all its runs are, announcing it as GitHub does."""
    runs = [r for r in repo.runs.values() if r.suite_id == suite.id]
    if suite.status == "completed" or not all(r.status == "completed" for r in runs):
        return
    failing = {"failure", "timed_out", "cancelled", "action_required"}
    worst = next((r.conclusion for r in runs if r.conclusion in failing), "success")
    suite.status, suite.conclusion, suite.updated_at = "completed", worst, now()
    events.check_suite(sb, repo, suite, "completed")


async def create_check_run(request: Request) -> JSONResponse:
    sb, repo = _require_app(request)
    data = await body_of(request)
    name = field(data, "name", str, required=True)
    sha = _sha_of(repo, field(data, "head_sha", str, required=True))
    suite = _suite_for(sb, repo, sha)
    run = CheckRun(sb.next_id(), suite.id, name, sha, now())
    _apply_run_fields(run, data, creating=True)
    repo.runs[run.id] = run
    suite.status = "in_progress" if suite.status != "completed" else suite.status
    events.check_run(sb, repo, run, "created")
    if run.status == "completed":
        events.check_run(sb, repo, run, "completed")
        _settle_suite(sb, repo, suite)
    return respond(shapes.check_run(sb, repo, run), 201)


async def update_check_run(request: Request) -> JSONResponse:
    sb, repo = _require_app(request)
    run = repo.runs.get(int_param(request, "check_run_id"))
    if run is None:
        raise not_found()
    was_completed = run.status == "completed"
    _apply_run_fields(run, await body_of(request), creating=False)
    if run.status == "completed" and not was_completed:
        events.check_run(sb, repo, run, "completed")
        _settle_suite(sb, repo, repo.suites[run.suite_id])
    return respond(shapes.check_run(sb, repo, run))


async def get_check_run(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    run = repo.runs.get(int_param(request, "check_run_id"))
    if run is None:
        raise not_found()
    return respond(shapes.check_run(sb, repo, run))


async def list_annotations(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    run = repo.runs.get(int_param(request, "check_run_id"))
    if run is None:
        raise not_found()
    return respond([shapes.annotation(sb, repo, run, a) for a in page(request, run.annotations)])


async def list_check_runs(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    sha = _sha_of(repo, request.path_params["ref"])
    name = request.query_params.get("check_name")
    found = [r for r in repo.runs.values() if r.head_sha == sha and name in (None, r.name)]
    found.sort(key=lambda r: -r.id)
    return respond(
        {
            "total_count": len(found),
            "check_runs": [shapes.check_run(sb, repo, r) for r in page(request, found)],
        }
    )


async def list_check_suites(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    sha = _sha_of(repo, request.path_params["ref"])
    found = [s for s in repo.suites.values() if s.head_sha == sha]
    head = gitcache.commit_info(repo, sha)
    shaped = [
        shapes.check_suite(
            sb, repo, s, sum(1 for r in repo.runs.values() if r.suite_id == s.id), head
        )
        for s in page(request, found)
    ]
    return respond({"total_count": len(found), "check_suites": shaped})


async def create_status(request: Request) -> JSONResponse:
    sb, repo, actor = repo_for(request, "write")
    sha = _sha_of(repo, request.path_params["sha"])
    data = await body_of(request)
    state = field(data, "state", str, required=True)
    if state not in STATUS_STATES:
        raise unprocessable(
            f"{state} is not a status state: use {', '.join(STATUS_STATES)}", field="state"
        )
    item = CommitStatus(
        sb.next_id(),
        sha,
        state,
        field(data, "context", str) or "default",
        field(data, "description", str),
        field(data, "target_url", str),
        actor.login,
        now(),
    )
    repo.statuses.append(item)
    events.status(sb, repo, item)
    return respond(shapes.status(sb, repo, item), 201)


async def combined_status(request: Request) -> JSONResponse:
    sb, repo, _ = repo_for(request, "read")
    sha = _sha_of(repo, request.path_params["ref"])
    latest: dict[str, CommitStatus] = {}
    for item in repo.statuses:
        if item.sha == sha:
            latest[item.context] = item  # later statuses of a context replace earlier ones
    states = {s.state for s in latest.values()}
    state = (
        "failure"
        if states & {"error", "failure"}
        else "pending"
        if "pending" in states or not states
        else "success"
    )
    api = shapes.repo_api(sb, repo)
    return respond(
        {
            "state": state,
            "statuses": [shapes.status(sb, repo, s) for s in latest.values()],
            "sha": sha,
            "total_count": len(latest),
            "repository": shapes.repository(sb, repo),
            "commit_url": f"{api}/commits/{sha}",
            "url": f"{api}/commits/{sha}/status",
        }
    )


ROUTES = [
    Route("/repos/{owner}/{repo}/check-runs", create_check_run, methods=["POST"]),
    Route("/repos/{owner}/{repo}/check-runs/{check_run_id}", get_check_run),
    Route("/repos/{owner}/{repo}/check-runs/{check_run_id}", update_check_run, methods=["PATCH"]),
    Route("/repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", list_annotations),
    Route("/repos/{owner}/{repo}/commits/{ref:path}/check-runs", list_check_runs),
    Route("/repos/{owner}/{repo}/commits/{ref:path}/check-suites", list_check_suites),
    Route("/repos/{owner}/{repo}/commits/{ref:path}/status", combined_status),
    Route("/repos/{owner}/{repo}/statuses/{sha}", create_status, methods=["POST"]),
]
