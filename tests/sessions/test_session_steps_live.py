"""A real agent CLI's session, confined as in production against the scripted model
server, rendered into steps as it runs: Claude Code from its stream-json events,
aider from its chat history once it has exited."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from agent_clis import cli_search_path, require_cli
from ballet.core.config import Runtime
from ballet.core.egress import parse_rule
from ballet.sessions import SessionOptions, StageInfo, TicketInfo, Workspaces
from ballet.sessions.confine import Isolation
from ballet.sessions.spec import RunnerSpec
from git_repos import make_origin
from model_server import ModelServer
from session_logs import RecordingSink, run_logged


@pytest.mark.parametrize(
    ("adapter", "executable", "model", "key", "path"),
    [
        ("claude-code", "claude", "claude-sonnet-4-5", "ANTHROPIC_API_KEY", ""),
        ("aider", "aider", "openai/gpt-4.1", "OPENAI_API_KEY", "/v1"),
    ],
)
def test_a_real_cli_session_is_rendered_as_steps(
    adapter: str,
    executable: str,
    model: str,
    key: str,
    path: str,
    model_server: ModelServer,
    tmp_path: Path,
) -> None:
    require_cli(executable)
    origin = make_origin(tmp_path, {"README.md": "# demo\n"})
    secret = "sk-contract-" + "k3y" * 10
    env = {"PATH": cli_search_path(), "LANG": "C.UTF-8", key: secret}
    spec = RunnerSpec(
        ticket=TicketInfo(
            repo="octo/demo", number=7, title="Add a greeting", body="Add greeting.txt.",
            author="octocat", url="https://github.com/octo/demo/issues/7",
        ),
        stage=StageInfo(id="implement"),
        runtime=Runtime(adapter=adapter, model=model, env=(key,), base_url=model_server.url + path),
        timeout_seconds=120, pipeline_name="default", branch="ballet/7-greeting", base="main",
        clone_url=origin.as_uri(),
    )  # fmt: skip
    port = urlsplit(model_server.url).port
    options = SessionOptions(
        isolation=Isolation(egress_allow=(parse_rule(f"127.0.0.1:{port}", trusted=True),))
    )
    sink = RecordingSink()
    result = run_logged(spec, Workspaces(tmp_path / "ws", parent_env=env), env, options, sink)

    assert result.failure_reason is None, result.report.summary + result.output_tail[-2000:]
    steps = sink.steps
    kinds = [(step.kind, step.title) for step in steps]
    assert kinds[0] == ("note", f"session started ({adapter}, model {model}, effort default)")
    assert steps[-2].kind == "note" and steps[-2].title.startswith("session ended (exit code 0")
    assert (steps[-1].kind, steps[-1].title) == ("report", "report: done")
    assert model_server.summary in steps[-1].body
    if adapter == "claude-code":
        tools = [step for step in steps if step.kind == "tool"]
        assert len(tools) == 1 and tools[0].title.startswith("$ printf '%s\\n' 'hello from")
        assert tools[0].exit_code == 0
        assert ("turn", "Done.") in kinds
    else:  # aider: from its chat history, not its output
        assert ("turn", "I add the file.") in kinds
        assert ("edit", model_server.file_name) in kinds
        assert not [step for step in steps if step.kind == "output"]
    assert secret not in sink.everything() and secret not in result.model_dump_json()
