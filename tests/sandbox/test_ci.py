"""The repository's CI runs on every push and reports a check suite with one check run."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from ballet.sandbox.server import BackgroundSandbox

from .conftest import Receiver, authed_url, installation_client, make_repo, push_branch, settle

CI = ["sh", "-c", "if test -f ok.txt; then echo all good; else echo ok.txt is missing; exit 3; fi"]


def test_failing_then_passing_commit(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    created = make_repo(admin, ci={"command": CI})
    settle(admin)
    gh = installation_client(sandbox)
    first = gh.rest.checks.list_for_ref("octo", "demo", created["head_sha"]).parsed_data
    assert [(r.name, r.status, r.conclusion) for r in first.check_runs] == [
        ("ci", "completed", "failure")
    ]
    assert "ok.txt is missing" in (first.check_runs[0].output.text or "")

    url = authed_url(sandbox, "sandbox-user:writer")
    sha = push_branch(tmp_path, url, "fix", {"ok.txt": "yes"})
    settle(admin)
    suites = gh.rest.checks.list_suites_for_ref("octo", "demo", sha).parsed_data
    assert [(s.head_branch, s.status, s.conclusion) for s in suites.check_suites] == [
        ("fix", "completed", "success")
    ]
    runs = gh.rest.checks.list_for_ref("octo", "demo", "fix").parsed_data.check_runs
    assert "all good" in (runs[0].output.text or "")

    announced = [
        (
            r.event,
            r.payload["action"],
            r.payload[r.event]["conclusion"],
        )
        for r in receiver.received
        if r.event in ("check_run", "check_suite")
    ]
    assert announced == [
        ("check_run", "created", None),
        ("check_run", "completed", "failure"),
        ("check_suite", "completed", "failure"),
        ("check_run", "created", None),
        ("check_run", "completed", "success"),
        ("check_suite", "completed", "success"),
    ]


def test_command_past_its_time_limit_is_killed(tmp_path: Path, receiver: Receiver) -> None:
    with (
        BackgroundSandbox(tmp_path, receiver.url, ci_timeout_seconds=0.5) as running,
        httpx.Client(base_url=running.api_url, timeout=30) as client,
    ):
        make_repo(client, ci={"command": ["sh", "-c", "echo started; sleep 30"]})
        settle(client)
        runs = client.get("/_sandbox/repos/octo/demo/state").json()["check_runs"]
    assert [(r["conclusion"], "started" in r["output"]["text"]) for r in runs] == [
        ("timed_out", True)
    ]


def test_missing_command_fails_the_run(admin: httpx.Client) -> None:
    make_repo(admin, ci={"command": ["/nonexistent/ci-tool"]})
    settle(admin)
    runs = admin.get("/_sandbox/repos/octo/demo/state").json()["check_runs"]
    assert runs[0]["conclusion"] == "failure"
    assert "could not start" in runs[0]["output"]["text"]


def test_ci_reports_as_its_own_app_and_names_the_pull_request(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    make_repo(admin, ci={"command": ["true"]})
    url = authed_url(sandbox, "sandbox-user:writer")
    push_branch(tmp_path, url, "topic", {"a": "1"})
    gh = installation_client(sandbox)
    pr = gh.rest.pulls.create("octo", "demo", title="t", head="topic", base="main").parsed_data
    head = push_branch(tmp_path, url, "topic", {"b": "2"}, start="topic")
    settle(admin)
    suite = [r.payload["check_suite"] for r in receiver.received if r.event == "check_suite"][-1]
    assert suite["head_sha"] == head
    assert suite["app"]["slug"] == "github-actions"
    assert suite["app"]["id"] != sandbox.sandbox.app.app_id
    assert [p["number"] for p in suite["pull_requests"]] == [pr.number]


def test_shutdown_mid_run_kills_the_command(tmp_path: Path, receiver: Receiver) -> None:
    pid_file = tmp_path / "ci.pid"
    command = ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 60"]
    with (
        BackgroundSandbox(tmp_path / "sb", receiver.url) as running,
        httpx.Client(base_url=running.api_url, timeout=30) as client,
    ):
        make_repo(client, ci={"command": command})
        while not pid_file.exists() or not pid_file.read_text().strip():
            time.sleep(0.05)
    pid = int(pid_file.read_text())
    status = Path(f"/proc/{pid}/status")
    # Killed at shutdown: gone, or a zombie about to be reaped, never still sleeping.
    deadline = time.monotonic() + 10
    while status.exists() and "State:\tS" in status.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not status.exists() or "State:\tS" not in status.read_text()


def test_a_failure_quotes_its_output_and_workflow_commands_annotate(
    sandbox: BackgroundSandbox, admin: httpx.Client
) -> None:
    script = (
        "echo compiling; echo '::error file=src/a.py,line=3,endLine=4,title=E1::bad thing'; "
        "echo '::warning::no file named'; echo 'it broke'; exit 1"
    )
    created = make_repo(admin, ci={"command": ["sh", "-c", script]})
    settle(admin)
    gh = installation_client(sandbox)
    (run,) = gh.rest.checks.list_for_ref("octo", "demo", created["head_sha"]).parsed_data.check_runs
    assert run.output.summary is not None
    assert run.output.summary.startswith("`sh -c")
    assert run.output.summary.endswith(
        "compiling\n::error file=src/a.py,line=3,endLine=4,"
        "title=E1::bad thing\n::warning::no file named\nit broke\n```"
    )
    listed = gh.rest.checks.list_annotations("octo", "demo", run.id).parsed_data
    assert isinstance(listed, list)
    assert [
        (a.path, a.start_line, a.end_line, a.annotation_level, a.title, a.message) for a in listed
    ] == [
        ("src/a.py", 3, 4, "failure", "E1", "bad thing"),
        (".github", 1, 1, "warning", None, "no file named"),
    ]
