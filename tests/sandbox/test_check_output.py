"""What a check says: a check run's output and annotations (through the App's REST calls,
or a failing CI run scripted with the admin API) and a commit status's description
and link; every response parses with githubkit's models (GitHub's OpenAPI description)."""

from __future__ import annotations

from typing import Any

import httpx
from ballet.sandbox.server import BackgroundSandbox
from githubkit_schemas.latest.models import CheckAnnotation, CheckRun, CombinedCommitStatus

from .conftest import Receiver, installation_client, make_repo, settle, token_for


def items(data: object) -> list[Any]:
    assert isinstance(data, list)
    return data


def _annotation(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "path": "src/app.py",
        "start_line": n,
        "end_line": n,
        "annotation_level": "failure",
        "message": f"problem {n}",
        **extra,
    }


def test_annotations_accumulate_across_updates_and_are_listed(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    sha = make_repo(admin)["head_sha"]
    gh = installation_client(sandbox)
    first = [_annotation(n) for n in range(1, 51)]
    first[0] = _annotation(1, title="E501", raw_details="line too long", start_column=3)
    run = gh.rest.checks.create(
        "octo",
        "demo",
        name="lint",
        head_sha=sha,
        status="in_progress",
        output={"title": "Lint", "summary": "50 so far", "annotations": first},
    ).parsed_data
    assert run.output.annotations_count == 50
    done = gh.rest.checks.update(
        "octo",
        "demo",
        run.id,
        conclusion="failure",
        output={"summary": "52 problems", "text": "all of them", "annotations": first[1:3]},
    ).parsed_data
    assert isinstance(done, CheckRun)
    out = done.output
    assert (out.title, out.summary, out.text, out.annotations_count) == (
        "Lint",
        "52 problems",
        "all of them",
        52,
    )
    assert out.annotations_url.endswith(f"/check-runs/{run.id}/annotations")

    listed = items(gh.rest.checks.list_annotations("octo", "demo", run.id).parsed_data)
    assert len(listed) == 30  # GitHub's page when per_page is not said
    assert all(isinstance(a, CheckAnnotation) for a in listed)
    one = listed[0]
    assert (one.path, one.start_line, one.end_line, one.annotation_level) == (
        "src/app.py",
        1,
        1,
        "failure",
    )
    assert (one.title, one.message, one.raw_details, one.start_column) == (
        "E501",
        "problem 1",
        "line too long",
        3,
    )
    assert one.blob_href.endswith(f"/octo/demo/blob/{sha}/src/app.py")
    tail = gh.rest.checks.list_annotations("octo", "demo", run.id, per_page=50, page=2)
    assert [a.message for a in items(tail.parsed_data)] == ["problem 2", "problem 3"]


def test_annotations_are_checked_as_github_checks_them(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    sha = make_repo(admin)["head_sha"]
    gh = installation_client(sandbox)
    run = gh.rest.checks.create("octo", "demo", name="lint", head_sha=sha).parsed_data
    refused: list[dict[str, Any]] = [
        {"summary": "s", "annotations": [_annotation(n) for n in range(51)]},
        {"summary": "s", "annotations": [{**_annotation(1), "annotation_level": "error"}]},
        {"summary": "s", "annotations": [{"path": "a", "start_line": 1, "end_line": 1}]},
        {"summary": "s", "annotations": [_annotation(1, end_line=2, start_column=1)]},
        {"title": "no summary"},
    ]
    # githubkit checks request bodies itself, so these go by hand.
    token = {"Authorization": f"token {token_for(sandbox)}"}
    for output in refused:
        bad = admin.patch(
            f"/repos/octo/demo/check-runs/{run.id}",
            json={"conclusion": "failure", "output": output},
            headers=token,
        )
        assert bad.status_code == 422, (output, bad.text)
    again = gh.rest.checks.get("octo", "demo", run.id).parsed_data
    assert (again.output.annotations_count, again.status) == (0, "queued")


def test_a_failing_ci_run_is_scripted_with_its_output_and_announced(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver
) -> None:
    sha = make_repo(admin)["head_sha"]
    made = admin.post(
        "/_sandbox/repos/octo/demo/check-runs",
        json={
            "name": "lint",
            "head_sha": sha,
            "status": "completed",
            "conclusion": "failure",
            "details_url": "https://ci.example/runs/7",
            "output": {
                "title": "2 problems",
                "summary": "ruff found 2 problems",
                "annotations": [
                    {"path": "a.py", "start_line": 3, "end_line": 3, "message": "unused import"},
                    {
                        "path": "b.py",
                        "start_line": 1,
                        "end_line": 4,
                        "annotation_level": "warning",
                        "title": "C901",
                        "message": "too complex",
                    },
                ],
            },
        },
    )
    assert made.status_code == 201, made.text
    gh = installation_client(sandbox)
    (run,) = gh.rest.checks.list_for_ref("octo", "demo", sha).parsed_data.check_runs
    assert (run.name, run.conclusion, run.details_url) == (
        "lint",
        "failure",
        "https://ci.example/runs/7",
    )
    assert run.app is not None and run.app.slug == "github-actions"
    assert (run.output.title, run.output.summary, run.output.annotations_count) == (
        "2 problems",
        "ruff found 2 problems",
        2,
    )
    listed = items(gh.rest.checks.list_annotations("octo", "demo", run.id).parsed_data)
    assert [(a.path, a.annotation_level, a.title) for a in listed] == [
        ("a.py", "failure", None),
        ("b.py", "warning", "C901"),
    ]
    settle(admin)
    announced = [
        (r.event, r.payload["action"]) for r in receiver.received if r.event.startswith("check_")
    ]
    assert announced == [
        ("check_run", "created"),
        ("check_run", "completed"),
        ("check_suite", "completed"),
    ]
    unknown = admin.post(
        "/_sandbox/repos/octo/demo/check-runs",
        json={"name": "x", "head_sha": "1" * 40, "status": "queued"},
    )
    assert unknown.status_code == 422


def test_a_status_keeps_its_description_and_link(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    sha = make_repo(admin)["head_sha"]
    gh = installation_client(sandbox)
    gh.rest.repos.create_commit_status(
        "octo",
        "demo",
        sha,
        state="failure",
        context="ci/jenkins",
        description="3 tests failed",
        target_url="https://jenkins.example/job/9",
    )
    combined = gh.rest.repos.get_combined_status_for_ref("octo", "demo", sha).parsed_data
    assert isinstance(combined, CombinedCommitStatus)
    (status,) = combined.statuses
    assert (status.context, status.state, status.description, status.target_url) == (
        "ci/jenkins",
        "failure",
        "3 tests failed",
        "https://jenkins.example/job/9",
    )
