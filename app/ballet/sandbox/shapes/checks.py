"""Check suites, check runs and commit statuses."""

from __future__ import annotations

from ballet.sandbox import gitcache
from ballet.sandbox.gitrepo import ZERO_SHA, CommitInfo
from ballet.sandbox.shapes.common import (
    JSON,
    app,
    ci_app,
    iso,
    node_id,
    repo_api,
    repo_html,
    repository,
    user,
)
from ballet.sandbox.state import CheckRun, CheckSuite, CommitStatus, Repo, Sandbox


def simple_commit(info: CommitInfo) -> JSON:
    return {
        "id": info.sha,
        "tree_id": info.tree,
        "message": info.message,
        "timestamp": info.timestamp,
        "author": {"name": info.author_name, "email": info.author_email},
        "committer": {"name": info.committer_name, "email": info.committer_email},
    }


def suite_app(sb: Sandbox, suite: CheckSuite) -> JSON:
    return app(sb) if suite.origin == "app" else ci_app(sb)


def pull_refs(sb: Sandbox, repo: Repo, sha: str) -> list[JSON]:
    """Open pull requests whose head is `sha`, as checks payloads list them."""
    api = repo_api(sb, repo)
    mini_repo = {"id": repo.id, "url": api, "name": repo.name}
    return [
        {
            "url": f"{api}/pulls/{pr.number}",
            "id": pr.id,
            "number": pr.number,
            "head": {"ref": pr.head_ref, "sha": pr.head_sha, "repo": mini_repo},
            "base": {"ref": pr.base_ref, "sha": _branch_sha(repo, pr.base_ref), "repo": mini_repo},
        }
        for pr in repo.pulls.values()
        if pr.head_sha == sha and repo.issues[pr.number].state == "open"
    ]


def _branch_sha(repo: Repo, branch: str) -> str:
    # The one git lookup among the shapes: GitHub gives the base's current sha here.
    return gitcache.branch(repo, branch) or ZERO_SHA


def check_suite(sb: Sandbox, repo: Repo, suite: CheckSuite, runs: int, head: CommitInfo) -> JSON:
    return {
        **_suite_fields(sb, repo, suite),
        "repository": repository(sb, repo),
        "head_commit": simple_commit(head),
        "latest_check_runs_count": runs,
        "check_runs_url": f"{repo_api(sb, repo)}/check-suites/{suite.id}/check-runs",
        "rerequestable": True,
        "runs_rerequestable": True,
    }


def check_run(sb: Sandbox, repo: Repo, run: CheckRun) -> JSON:
    api = f"{repo_api(sb, repo)}/check-runs/{run.id}"
    output = {
        "title": run.output.get("title"),
        "summary": run.output.get("summary"),
        "text": run.output.get("text"),
        "annotations_count": len(run.annotations),
        "annotations_url": f"{api}/annotations",
    }
    return {
        "id": run.id,
        "head_sha": run.head_sha,
        "node_id": node_id("CheckRun", run.id),
        "external_id": run.external_id,
        "url": api,
        "html_url": f"{repo_html(sb, repo)}/runs/{run.id}",
        "details_url": run.details_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": iso(run.started_at),
        "completed_at": iso(run.completed_at),
        "output": output,
        "name": run.name,
        "check_suite": _suite_ref(sb, repo, repo.suites[run.suite_id]),
        "app": suite_app(sb, repo.suites[run.suite_id]),
        "pull_requests": pull_refs(sb, repo, run.head_sha),
    }


def annotation(sb: Sandbox, repo: Repo, run: CheckRun, item: JSON) -> JSON:
    """One of a check run's annotations as `GET .../annotations` lists it: what the
    App sent, every optional field present (null when not sent), and a link to the file."""
    return {
        "path": item["path"],
        "blob_href": f"{repo_html(sb, repo)}/blob/{run.head_sha}/{item['path']}",
        "start_line": item["start_line"],
        "end_line": item["end_line"],
        "start_column": item.get("start_column"),
        "end_column": item.get("end_column"),
        "annotation_level": item["annotation_level"],
        "title": item.get("title"),
        "message": item["message"],
        "raw_details": item.get("raw_details"),
    }


def _suite_ref(sb: Sandbox, repo: Repo, suite: CheckSuite) -> JSON:
    """The suite as a check run carries it (webhooks show all of this, REST only the id)."""
    return {**_suite_fields(sb, repo, suite), "deployment": None}


def _suite_fields(sb: Sandbox, repo: Repo, suite: CheckSuite) -> JSON:
    """What a suite and a check run's copy of it both show."""
    return {
        "id": suite.id,
        "node_id": node_id("CheckSuite", suite.id),
        "head_branch": suite.head_branch,
        "head_sha": suite.head_sha,
        "status": suite.status,
        "conclusion": suite.conclusion,
        "url": f"{repo_api(sb, repo)}/check-suites/{suite.id}",
        "before": suite.before,
        "after": suite.head_sha,
        "pull_requests": pull_refs(sb, repo, suite.head_sha),
        "app": suite_app(sb, suite),
        "created_at": iso(suite.created_at),
        "updated_at": iso(suite.updated_at),
    }


def status(sb: Sandbox, repo: Repo, item: CommitStatus) -> JSON:
    return {
        "url": f"{repo_api(sb, repo)}/statuses/{item.sha}",
        "avatar_url": None,
        "id": item.id,
        "node_id": node_id("StatusContext", item.id),
        "state": item.state,
        "description": item.description,
        "target_url": item.target_url,
        "context": item.context,
        "created_at": iso(item.created_at),
        "updated_at": iso(item.created_at),
        "creator": user(sb, item.creator),
    }
