"""Each runtime adapter drives its real CLI through `run_session` against a scripted
model server on loopback: the CLI edits a file, commits, reports and exits; the
branch is pushed, the report parsed, and the usage Ballet meters is what the
server served (never what the report claims).

Every CLI goes through Ballet's model gateway (the server is its upstream, and
nothing else reaches it): the server sees the real key, the session holds only
its token, the gateway's meter counts every token served and prices it."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from agent_clis import require_cli
from ballet.core.config import Adapter, Runtime
from ballet.core.egress import parse_rule
from ballet.core.spend import SessionBudget
from ballet.sessions import (
    RunnerSpec,
    SessionOptions,
    SessionResult,
    StageInfo,
    TicketInfo,
    Workspaces,
    anonymous,
    run_session,
)
from ballet.sessions.confine import Isolation
from git_repos import git
from model_server import ModelServer

BRANCH = "ballet/7-greeting"
# What a CLI asks the egress proxy for that no setting turns off (docs/runtimes.md):
# opencode npm-installs `@opencode-ai/plugin` into its config directory at every
# start, in the background; refused, it goes on without it.
KNOWN_EGRESS = {"opencode": ["registry.npmjs.org:443"]}


@dataclass(frozen=True)
class Case:
    adapter: Adapter
    executable: str
    model: str
    key: str  # the variable the runtime declares, as docs/runtimes.md says
    path: str  # what `base_url` adds to the server's address
    costed: bool  # the CLI prices the calls itself


CASES = [
    Case("claude-code", "claude", "claude-sonnet-4-5", "ANTHROPIC_API_KEY", "", costed=True),
    Case("codex", "codex", "gpt-5.1-codex", "OPENAI_API_KEY", "/v1", costed=False),
    Case("gemini", "gemini", "gemini-2.5-pro", "GEMINI_API_KEY", "", costed=False),
    Case("opencode", "opencode", "ballet/gpt-4.1", "OPENAI_API_KEY", "/v1", costed=False),
    Case("aider", "aider", "openai/gpt-4.1", "OPENAI_API_KEY", "/v1", costed=True),
]


def spec_for(runtime: Runtime, origin: Path) -> RunnerSpec:
    return RunnerSpec(
        ticket=TicketInfo(
            repo="octo/demo",
            number=7,
            title="Add a greeting",
            body="Add greeting.txt. See https://example.com/spec for the wording.",
            labels=("ballet",),
            author="octocat",
            url="https://github.com/octo/demo/issues/7",
        ),
        stage=StageInfo(id="implement", skills=("implementer",)),
        skill_texts={"implementer": "Write the code."},
        runtime=runtime,
        timeout_seconds=120,
        pipeline_name="default",
        branch=BRANCH,
        base="main",
        clone_url=origin.as_uri(),
    )


def run(
    spec: RunnerSpec,
    workspaces: Workspaces,
    env: dict[str, str],
    model_server: ModelServer,
    *,
    readonly: tuple[Path, ...] = (),
    observed: tuple[Path, ...] = (),
    direct: bool = False,
) -> SessionResult:
    """The session confined as in production. Through the gateway, nothing but the
    gateway reaches the model server; `direct`: the operator allows the server
    (BALLET_SESSION_EGRESS_ALLOW), for a runtime without provider keys.
    `readonly` are the operator's tool directories, `observed` what the test reads."""
    port = urlsplit(model_server.url).port
    isolation = Isolation(
        egress_allow=(parse_rule(f"127.0.0.1:{port}", trusted=True),) if direct else (),
        readonly_paths=readonly,
        test_writable=observed,
    )
    options = SessionOptions(isolation=isolation)
    return asyncio.run(
        run_session(
            spec, workspaces=workspaces, git_auth=anonymous, parent_env=env, options=options
        )
    )


def refused_destinations(result: SessionResult) -> list[str]:
    """What Ballet's egress proxy refused the session, from the end of its output."""
    _, _, refusals = result.output_tail.partition("--- egress refused by Ballet's proxy")
    return re.findall(r"^(\S+) is not an allowed destination", refusals, re.M)


KEY_HEADERS = ("x-api-key", "authorization", "x-goog-api-key")


def keys_seen(model_server: ModelServer) -> set[str]:
    """Every credential the model server was sent."""
    return {
        value.removeprefix("Bearer ")
        for request in model_server.requests
        for name, value in request["headers"].items()
        if name in KEY_HEADERS
    }


def env_dump(case: Case, observed: Path, tmp_path: Path) -> tuple[dict[str, str], tuple[Path, ...]]:
    """Has the session write the environment it saw to `observed/env.txt`: the model's
    tool call runs `env` (aider, which has no shell tool: a sitecustomize module)."""
    if case.adapter != "aider":
        return {}, ()
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os\n"
        f"open({str(observed / 'env.txt')!r}, 'w').write("
        "''.join(f'{k}={v}\\n' for k, v in os.environ.items()))\n"
    )
    return {"PYTHONPATH": str(site)}, (site,)


@pytest.mark.parametrize("case", CASES, ids=[c.adapter for c in CASES])
def test_the_real_cli_commits_reports_and_is_metered(
    case: Case,
    model_server: ModelServer,
    origin: Path,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    observed: Path,
    tmp_path: Path,
) -> None:
    require_cli(case.executable)
    # The agent's report claims a usage of its own; what the gateway metered must win.
    model_server.claimed_usage = {"input_tokens": 1, "output_tokens": 1, "cost_usd": 0}
    model_server.before_command = f"env > {observed / 'env.txt'} && "
    extra_env, site = env_dump(case, observed, tmp_path)
    runtime = Runtime(
        adapter=case.adapter,
        model=case.model,
        effort="high",
        env=(case.key, *extra_env),
        base_url=model_server.url + case.path,  # the gateway's upstream
    )
    env = {**parent_env, **extra_env}
    result = run(
        spec_for(runtime, origin),
        workspaces,
        env,
        model_server,
        readonly=site,
        observed=(observed,),
    )

    assert result.failure_reason is None, result.report.summary + result.output_tail[-3000:]
    assert result.report.outcome == "done"
    assert result.report.summary == model_server.summary
    pushed = git("show", f"refs/heads/{BRANCH}:{model_server.file_name}", cwd=origin)
    assert pushed == model_server.file_text
    assert result.head_sha == git("rev-parse", f"refs/heads/{BRANCH}", cwd=origin)
    files = git("ls-tree", "-r", "--name-only", f"refs/heads/{BRANCH}", cwd=origin)
    assert files.splitlines() == ["README.md", model_server.file_name]

    # The provider saw the real key on every request; the session held only its token.
    real = parent_env[case.key]
    assert keys_seen(model_server) == {real}, keys_seen(model_server)
    seen = dict(
        line.split("=", 1)
        for line in (observed / "env.txt").read_text().splitlines()
        if "=" in line
    )
    assert real not in (observed / "env.txt").read_text()
    assert seen[case.key] and seen["BALLET_GATEWAY_URL"].startswith("http://127.0.0.1:")

    kinds = [s.kind for s in model_server.served]
    if case.adapter == "aider":
        # One reply with the edit and the report, then aider's commit-message call.
        assert kinds == ["aider", "side"], kinds
    else:
        assert kinds == ["tool_call", "final"], kinds
    served_in, served_out = model_server.total()
    # The gateway metered every answer, tokens as served, and priced them.
    spend = result.spend
    assert spend is not None and spend.requests == len(model_server.served), spend
    assert (spend.all_input_tokens, spend.output_tokens) == (served_in, served_out), (
        model_server.served
    )
    assert spend.cost_usd > 0 and not spend.price_unknown
    assert (result.usage.input_tokens, result.usage.output_tokens) == (served_in, served_out)
    assert result.usage.cost_usd == spend.cost_usd
    assert result.report.usage == result.usage
    first = model_server.requests[0]["body"]
    if case.adapter == "codex":
        assert first["reasoning"]["effort"] == "high"
    if case.adapter == "claude-code":
        assert first["thinking"]["type"] == "enabled"
    # Confined: only the gateway was reachable, and the CLI asked for nothing else.
    assert refused_destinations(result) == KNOWN_EGRESS.get(case.adapter, []), (
        "the CLI reached beyond its model API"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.adapter for c in CASES])
def test_a_reached_cap_stops_the_next_request_and_the_session_ends_budget(
    case: Case,
    model_server: ModelServer,
    origin: Path,
    workspaces: Workspaces,
    parent_env: dict[str, str],
) -> None:
    require_cli(case.executable)
    runtime = Runtime(
        adapter=case.adapter,
        model=case.model,
        env=(case.key,),
        base_url=model_server.url + case.path,
    )
    # A cap the first answer overruns: the next request is refused before it is sent.
    spec = spec_for(runtime, origin).model_copy(
        update={"budget": SessionBudget(session_usd=0.000001)}
    )
    result = run(spec, workspaces, parent_env, model_server)

    assert result.report.outcome == "budget", result.report.summary + result.output_tail[-3000:]
    assert result.cap_reached is not None and result.cap_reached.scope == "session"
    assert "this session's cost cap ($0.00) is reached" in result.report.summary
    assert len(model_server.served) == 1  # the one answer in flight, then nothing
    assert result.spend is not None and result.spend.requests == 1
    assert "Ballet stopped this session" in result.output_tail


def test_a_missing_cli_fails_with_how_to_install_it() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"install-agent-clis\.sh"):
        require_cli("no-such-agent-cli")


def test_a_declared_opencode_config_is_merged_with_ballets_and_honoured(
    model_server: ModelServer, origin: Path, workspaces: Workspaces, parent_env: dict[str, str]
) -> None:
    require_cli("opencode")
    declared = {
        "provider": {
            "ballet": {
                "options": {
                    # The user's: opencode sends the provider's headers with every call.
                    "headers": {"X-Declared-Config": "kept"},
                    # Ballet's wins: the endpoint its egress proxy lets through.
                    "baseURL": "http://127.0.0.1:9/nowhere",
                }
            }
        },
        "share": "auto",
    }
    env = {**parent_env, "OPENCODE_CONFIG_CONTENT": json.dumps(declared)}
    runtime = Runtime(
        adapter="opencode",
        model="ballet/fake-model",
        env=("OPENAI_API_KEY", "OPENCODE_CONFIG_CONTENT"),
        base_url=model_server.url + "/v1",
    )
    result = run(spec_for(runtime, origin), workspaces, env, model_server)

    assert result.failure_reason is None, result.report.summary + result.output_tail[-3000:]
    assert result.report.summary == model_server.summary
    calls = [r for r in model_server.requests if r["path"] == "/v1/chat/completions"]
    assert calls and all(r["headers"].get("x-declared-config") == "kept" for r in calls), [
        r["headers"] for r in calls
    ]


def test_a_declared_pythonpath_follows_ballets_meter_and_its_sitecustomize_runs(
    model_server: ModelServer,
    origin: Path,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    tmp_path: Path,
    observed: Path,
) -> None:
    require_cli("aider")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"open({str(observed / 'ran')!r}, 'a').write('declared sitecustomize\\n')\n"
    )
    env = {**parent_env, "PYTHONPATH": str(site)}
    runtime = Runtime(
        adapter="aider",
        model="openai/gpt-4.1",
        env=("OPENAI_API_KEY", "PYTHONPATH"),
        base_url=model_server.url + "/v1",
    )
    spec = spec_for(runtime, origin)
    result = run(spec, workspaces, env, model_server, readonly=(site,), observed=(observed,))

    assert result.failure_reason is None, result.report.summary + result.output_tail[-3000:]
    # Ballet's meter still saw every call, and the declared module ran in aider's Python.
    assert (result.usage.input_tokens, result.usage.output_tokens) == model_server.total()
    assert "declared sitecustomize" in (observed / "ran").read_text()
