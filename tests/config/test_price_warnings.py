"""A cost budget over a model with no known price is a warning, not an error: the
file runs tickets, and `ballet validate` says where (core/price_rules.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ballet.core.config import BalletConfig, Budget, Pipeline, Runtime, Stage
from ballet.core.price_rules import pipeline_price_problems
from ballet.core.resolve import resolve_pipeline
from ballet.core.validate import config_warnings
from config_helpers import valid

PRICED = {("anthropic", "claude-sonnet-4-5"), ("openai", "gpt-5"), ("gemini", "gemini-2.5-pro")}


def has_price(provider: str, model: str) -> bool:
    return (provider, model) in PRICED


BUDGETED = """\
runtimes:
  claude: {adapter: claude-code, model: claude-sonnet-4-5, env: [ANTHROPIC_API_KEY]}
  local: {adapter: opencode, model: ollama/qwen3-coder, env: [OLLAMA_HOST]}
  aider: {adapter: aider, model: my-finetune, keys: [OPENAI_API_KEY]}
  script: {adapter: command, command: [python3, agent.py]}
default_runtime: claude
pipelines:
  default:
    budget: {cost_usd: 10}
    stages:
      - {id: implement, kind: agent}
      - {id: review, kind: agent, runtime: local}
      - {id: verify, kind: agent, runtime: aider}
      - {id: probe, kind: agent, model: gpt-oss, runtime: claude}
      - {id: run, kind: agent, runtime: script}
"""


def test_each_unpriced_model_a_cost_budget_covers_is_a_warning_at_its_model() -> None:
    config = valid(BUDGETED)
    warnings = config_warnings(BUDGETED, config, has_price=has_price)
    at = [(w.line, w.column) for w in warnings]
    assert at == [(3, 37), (4, 34), (14, 41)]  # local, aider, the probe stage's own model
    local, aider, probe = (w.message for w in warnings)
    assert local.startswith("warning: model `ollama/qwen3-coder` from ollama has no known price")
    assert 'counted in tokens and shown as "price unknown"' in local
    assert "bound the pipeline with `budget.sessions`" in local
    assert "`my-finetune` from openai" in aider  # the runtime's one key says the provider
    assert "`gpt-oss` from anthropic" in probe
    assert str(warnings[0]).startswith(".ballet.yml:3:37: warning: model")


def test_no_warning_without_a_cost_budget_or_for_what_the_cli_names() -> None:
    unbudgeted = BUDGETED.replace("budget: {cost_usd: 10}", "budget: {sessions: 9}")
    assert config_warnings(unbudgeted, valid(unbudgeted), has_price=has_price) == []
    aliases = """\
runtimes:
  claude: {adapter: claude-code, model: opus}
  gemini: {adapter: gemini, model: pro}
  codex: {adapter: codex}
  open: {adapter: opencode, model: google/gemini-2.5-pro}
default_runtime: claude
pipelines:
  default:
    budget: {session_cost_usd: 1}
    stages:
      - {id: a, kind: agent}
      - {id: b, kind: agent, runtime: gemini}
      - {id: c, kind: agent, runtime: codex}
      - {id: d, kind: agent, runtime: open}
"""
    assert config_warnings(aliases, valid(aliases), has_price=has_price) == []


def test_a_session_cost_cap_alone_warns_too_and_roles_count() -> None:
    text = """\
runtimes:
  claude: {adapter: claude-code, model: claude-sonnet-4-5}
  cheap: {adapter: codex, model: no-such-model}
default_runtime: claude
roles:
  security: {runtime: cheap}
pipelines:
  default:
    budget: {session_cost_usd: 2}
    stages: [{id: a, kind: agent}]
"""
    (warning,) = config_warnings(text, valid(text), has_price=has_price)
    assert warning.line == 3 and "`no-such-model` from openai" in warning.message


def test_a_pinned_pipeline_is_judged_with_the_deployment_runtime() -> None:
    house = Runtime(adapter="claude-code", model="house-model")
    for budget, expected in ((Budget(), 0), (Budget(cost_usd=5), 1)):
        config = BalletConfig(
            pipelines={"default": Pipeline(budget=budget, stages=(Stage(id="a", kind="agent"),))}
        )
        pinned = resolve_pipeline(config, (), default_runtime=house)
        said = pipeline_price_problems(pinned, has_price)
        assert len(said) == expected
    assert said[0].startswith("model `house-model` from anthropic has no known price")


def ballet_validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ballet", "validate", str(path)], capture_output=True, text=True
    )


def test_ballet_validate_prints_warnings_and_exits_0(tmp_path: Path) -> None:
    """With the real price table: a made-up model has no price, Claude Sonnet has."""
    path = tmp_path / ".ballet.yml"
    path.write_text(BUDGETED)
    done = ballet_validate(path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{path}:3:37: warning: model `ollama/qwen3-coder`")
    assert lines[1].startswith(f"{path}:4:34: warning: model `my-finetune` from openai")
    assert lines[2].startswith(f"{path}:14:41: warning: model `gpt-oss` from anthropic")
    assert lines[3] == f"{path}: valid; 1 pipeline: default (5 stages)"
    path.write_text(BUDGETED.replace("budget: {cost_usd: 10}", "budget: {sessions: 3}"))
    done = ballet_validate(path)
    assert done.stdout == f"{path}: valid; 1 pipeline: default (5 stages)\n"
