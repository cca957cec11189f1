"""Ballet's models of GitHub's responses and webhooks against GitHub's own
OpenAPI description: every value GitHub documents for a field Ballet reads
(enum member, null, absence, oneOf alternative) must parse.

A failure names the field and the value, e.g.
`GET /repos/{owner}/{repo}/commits/{ref}/check-runs.check_runs[].status = 'waiting': refused`.
"""

from __future__ import annotations

from typing import Any

import pytest
from ballet.github import issue_graph, reviews
from ballet.github import models as m
from ballet.github.merge_methods import MergeSettings
from ballet.github.payloads import Envelope
from ballet.github.translate import HANDLED_EVENTS
from ballet.github.webhook_models import Payload
from pydantic import BaseModel
from schema_walk import Spec, Walk

R = "/repos/{owner}/{repo}"
# (model, method, path, status): every response the forge and the ticket source read.
RESPONSES: list[tuple[type[BaseModel], str, str, str]] = [
    (m.AppData, "get", "/app", "200"),
    (m.InstallationData, "get", f"{R}/installation", "200"),
    (m.Repository, "get", R, "200"),
    (m.ContentItem, "get", f"{R}/contents/{{path}}", "200"),
    (m.GitRef, "get", f"{R}/git/ref/{{ref}}", "200"),
    (m.GitCommit, "get", f"{R}/git/commits/{{commit_sha}}", "200"),
    (m.Branch, "get", f"{R}/branches/{{branch}}", "200"),
    (m.GitCommit, "post", f"{R}/git/commits", "201"),
    (m.PullRequestData, "post", f"{R}/pulls", "201"),
    (m.PullRequestData, "get", f"{R}/pulls", "200"),
    (m.PullRequestData, "get", f"{R}/pulls/{{pull_number}}", "200"),
    (m.PullFile, "get", f"{R}/pulls/{{pull_number}}/files", "200"),
    (m.IssueComment, "get", f"{R}/issues/{{issue_number}}/comments", "200"),
    (m.IssueComment, "post", f"{R}/issues/{{issue_number}}/comments", "201"),
    (m.IssueComment, "patch", f"{R}/issues/comments/{{comment_id}}", "200"),
    (m.CheckRunData, "post", f"{R}/check-runs", "201"),
    (m.CheckRunList, "get", f"{R}/commits/{{ref}}/check-runs", "200"),
    (m.CombinedStatus, "get", f"{R}/commits/{{ref}}/status", "200"),
    (m.CheckAnnotationData, "get", f"{R}/check-runs/{{check_run_id}}/annotations", "200"),
    (reviews.ReviewData, "get", f"{R}/pulls/{{pull_number}}/reviews/{{review_id}}", "200"),
    (
        reviews.ReviewCommentData,
        "get",
        f"{R}/pulls/{{pull_number}}/reviews/{{review_id}}/comments",
        "200",
    ),
    (m.MergeData, "put", f"{R}/pulls/{{pull_number}}/merge", "200"),
    (m.PermissionData, "get", f"{R}/collaborators/{{username}}/permission", "200"),
    (m.IssueData, "get", f"{R}/issues/{{issue_number}}", "200"),
    (MergeSettings, "get", R, "200"),
    (issue_graph.IssueData, "get", f"{R}/issues/{{issue_number}}", "200"),
    (issue_graph.IssueData, "get", f"{R}/issues/{{issue_number}}/parent", "200"),
    (issue_graph.IssueData, "get", f"{R}/issues/{{issue_number}}/sub_issues", "200"),
    (m.HookDelivery, "get", "/app/hook/deliveries", "200"),
    (m.InstallationRepositories, "get", "/installation/repositories", "200"),
    (m.IssueListItem, "get", f"{R}/issues", "200"),
    (m.InstallationData, "get", "/app/installations", "200"),
]


@pytest.mark.parametrize(
    ("model", "method", "path", "status"),
    RESPONSES,
    ids=[f"{meth.upper()} {path}" for _, meth, path, _ in RESPONSES],
)
def test_response_model_takes_every_documented_value(
    github_spec: Spec, model: type[BaseModel], method: str, path: str, status: str
) -> None:
    walk = Walk(github_spec)
    walk.model(model, github_spec.response(method, path, status), f"{method.upper()} {path}")
    assert walk.checked > 0, "the walk compared nothing: the schema lookup is wrong"
    assert walk.problems == []


def test_timeline_cross_references_are_read_as_documented(github_spec: Spec) -> None:
    """The timeline is an anyOf of event shapes; Ballet reads only `cross-referenced`."""
    events = github_spec.response("get", f"{R}/issues/{{issue_number}}/timeline", "200")
    alternatives = [github_spec.resolve(a) for a in github_spec.resolve(events["items"])["anyOf"]]
    schema = github_spec.resolve({"$ref": "#/components/schemas/timeline-cross-referenced-event"})
    assert schema in alternatives
    walk = Walk(github_spec)
    walk.model(issue_graph.CrossReferenced, schema, "timeline cross-referenced event")
    assert walk.checked > 0 and walk.problems == []


def _handled_webhooks(spec: Spec) -> list[str]:
    names: list[str] = []
    for name, item in spec.doc["x-webhooks"].items():
        event = item["post"]["requestBody"]["content"]["application/json"]["schema"]
        ref: str = event.get("$ref", "")
        # "issue-comment-created" is event issue_comment, action created.
        if any(name.startswith(e.replace("_", "-")) for e in HANDLED_EVENTS) and ref:
            names.append(name)
    return names


def test_webhook_models_keep_every_documented_value(github_spec: Spec) -> None:
    names = _handled_webhooks(github_spec)
    assert len(names) > 40, names  # every action of every event Ballet handles
    problems: list[str] = []
    checked = 0
    for name in names:
        schema: Any = github_spec.webhook(name)
        for model in (Payload, Envelope):
            fixed = {"event": name} if model is Envelope else {}
            walk = Walk(github_spec, lenient=True, fixed=fixed)
            walk.model(model, schema, name)
            problems += walk.problems
            checked += walk.checked
    assert checked > 1000
    assert problems == []
