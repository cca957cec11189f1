"""Each runtime adapter against a fake of its CLI on PATH: argv, environment, usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ballet.core.config import Adapter, Runtime
from ballet.core.report import Usage
from ballet.sessions import (
    SessionOptions,
    Workspaces,
)
from git_repos import git, remote_refs
from session_fake_clis import fake_cli
from session_helpers import MakeSpec, WriteScript, run

CASES: list[tuple[Adapter, str, Usage, list[str]]] = [
    (
        "claude-code",
        "claude",
        Usage(input_tokens=153, output_tokens=57, cost_usd=0.0123),  # modelUsage, not usage
        ["--model", "sonnet", "--effort", "low"],
    ),
    (
        "codex",
        "codex",
        Usage(input_tokens=200, output_tokens=70),
        ["-m", "sonnet", "-c", 'model_reasoning_effort="low"'],
    ),
    (
        "aider",
        "aider",
        Usage(input_tokens=1500, output_tokens=150, cost_usd=0.015),
        ["--model", "sonnet", "--reasoning-effort", "low"],
    ),
    ("gemini", "gemini", Usage(input_tokens=300, output_tokens=90), ["-m", "sonnet"]),
    (
        "opencode",
        "opencode",
        Usage(input_tokens=106, output_tokens=30, cost_usd=0.005),
        ["-m", "sonnet", "--variant", "low"],
    ),
]


def contains_run(argv: list[str], run: list[str]) -> bool:
    return any(argv[i : i + len(run)] == run for i in range(len(argv)))


@pytest.mark.parametrize(("adapter", "executable", "usage", "flags"), CASES)
def test_adapter_runs_its_cli_and_reads_its_usage(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
    observed: Path,
    adapter: Adapter,
    executable: str,
    usage: Usage,
    flags: list[str],
) -> None:
    log = observed / "cli.json"
    write_script(executable, fake_cli(executable, str(log)))
    runtime = Runtime(adapter=adapter, model="sonnet", effort="low", env=("ANTHROPIC_API_KEY",))
    result = run(make_spec(runtime=runtime), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    assert result.report.summary == "did the work"
    assert result.usage == usage
    assert result.report.usage == usage  # the report stated none, so the CLI's fills it in
    seen: dict[str, Any] = json.loads(log.read_text())
    assert contains_run(seen["argv"], flags), seen["argv"]
    assert "ballet/7-greeting" in remote_refs(origin).__repr__()
    pushed = git("ls-tree", "--name-only", "refs/heads/ballet/7-greeting", cwd=origin)
    assert "work.txt" in pushed.splitlines()
    assert not any(name.startswith(".aider") for name in pushed.splitlines())


def test_what_the_cli_metered_wins_over_the_usage_a_report_claims(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    script = fake_cli("codex", str(observed / "cli.json")).replace(
        '"summary": "did the work"}',
        '"summary": "did the work", "usage": {"input_tokens": 1, "output_tokens": 2}}',
    )
    write_script("codex", script)
    result = run(make_spec(runtime=Runtime(adapter="codex")), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    assert result.usage == Usage(input_tokens=200, output_tokens=70)
    assert result.report.usage == result.usage


def test_a_command_runtime_reports_its_own_usage(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
) -> None:
    write_script(
        "agent",
        "import json, os\n"
        "json.dump({'outcome': 'done', 'summary': 's', 'usage': {'input_tokens': 5,"
        " 'output_tokens': 6, 'cost_usd': 0.5}}, open(os.environ['BALLET_REPORT'], 'w'))\n",
    )
    result = run(make_spec(), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    assert result.usage == Usage(input_tokens=5, output_tokens=6, cost_usd=0.5)


def test_claude_research_phase_runs_opus_with_high_effort(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    log = observed / "cli.json"
    write_script("claude", fake_cli("claude", str(log)))
    runtime = Runtime(adapter="claude-code", model="sonnet", env=("ANTHROPIC_API_KEY",))
    result = run(make_spec(runtime=runtime, phase="research"), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    argv = json.loads(log.read_text())["argv"]
    assert contains_run(argv, ["--model", "opus"]) and contains_run(argv, ["--effort", "high"])
    assert "## This phase: research" in argv[argv.index("-p") + 1]


def test_a_cli_error_fails_the_session_but_its_cost_still_counts(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    write_script("claude", fake_cli("claude", str(observed / "cli.json")))
    runtime = Runtime(adapter="claude-code", env=("ANTHROPIC_API_KEY",))
    spec = make_spec(
        runtime=runtime, ticket=make_spec().ticket.model_copy(update={"title": "FAIL"})
    )
    result = run(spec, workspaces, parent_env, options)
    assert result.failure_reason == "exit_code"
    assert "API Error: 500" in result.report.summary
    assert result.usage.cost_usd == pytest.approx(0.0123)


def test_claude_without_its_declared_key_fails_with_the_cli_message(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    write_script("claude", fake_cli("claude", str(observed / "cli.json")))
    # The worker has ANTHROPIC_API_KEY, but the runtime does not declare it.
    result = run(make_spec(runtime=Runtime(adapter="claude-code")), workspaces, parent_env, options)
    assert result.failure_reason == "exit_code"
    assert "Please run /login" in result.report.summary


def test_a_command_runtime_without_a_command_is_a_config_error(
    make_spec: MakeSpec,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
) -> None:
    result = run(make_spec(runtime=Runtime(adapter="command")), workspaces, parent_env, options)
    assert result.failure_reason == "runtime"
    assert "needs `command:`" in result.report.summary


def test_a_runtime_command_replaces_the_cli_executable(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    log = observed / "cli.json"
    write_script("pinned-gemini", fake_cli("gemini", str(log)))
    runtime = Runtime(adapter="gemini", command=("pinned-gemini",))
    result = run(make_spec(runtime=runtime), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    seen = json.loads(log.read_text())
    assert seen["env"]["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    assert contains_run(seen["argv"], ["--approval-mode", "yolo"])
