"""A runtime may not declare in `env:` a variable Ballet sets itself in a format the two
cannot merge: `ballet validate` (and a ticket's start, which parses the same way) refuses
it at the `env:` entry, saying what to do instead (core/runtime_env.py's table)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ballet.core.config import Adapter
from ballet.core.runtime_env import ADAPTERS, SESSION, OwnedVariable
from ballet.core.validate import parse_config
from config_helpers import only_error, valid

PIPELINE = (
    "pipelines:\n  default:\n    stages:\n"
    "      - {id: implement, kind: agent, runtime: r}\n"
    "      - {id: merge, kind: platform, action: merge, next: {merged: $done}}\n"
)


def runtime_file(adapter: Adapter, *names: str, base_url: bool = False) -> str:
    endpoint = '    base_url: "http://llm.internal:8000/v1"\n' if base_url else ""
    model = "    model: local/qwen3-coder\n" if adapter == "opencode" else ""
    entries = "".join(f"      - {name}\n" for name in names)
    body = f"runtimes:\n  r:\n    adapter: {adapter}\n{model}{endpoint}    env:\n{entries}"
    if adapter == "command":
        body += "    command: [python3, agent.py]\n"
    return body + PIPELINE


def entry_position(text: str, name: str) -> tuple[int, int]:
    lines = text.splitlines()
    line = next(i for i, text in enumerate(lines) if text == f"      - {name}")
    return line + 1, lines[line].index(name) + 1


REFUSED = [
    (adapter, variable)
    for adapter in ADAPTERS
    for variable in (*SESSION, *ADAPTERS[adapter])
    if variable.declared == "refused"
]


@pytest.mark.parametrize(
    ("adapter", "variable"), REFUSED, ids=[f"{a}-{v.name}" for a, v in REFUSED]
)
def test_every_refused_variable_is_refused_at_its_env_entry_with_the_advice(
    adapter: Adapter, variable: OwnedVariable
) -> None:
    text = runtime_file(adapter, "OPENAI_API_KEY", variable.name, base_url=variable.with_base_url)
    error = only_error(text)
    assert (error.line, error.column) == entry_position(text, variable.name)
    assert error.message.startswith(f"Ballet sets `{variable.name}")
    assert variable.why in error.message and error.message.endswith(variable.advice)


def test_validate_refuses_tmpdir_with_line_col_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / ".ballet.yml"
    path.write_text(
        "runtimes:\n"
        "  script: {adapter: command, command: [python3, agent.py], env: [API_KEY, TMPDIR]}\n"
        + PIPELINE.replace("runtime: r", "runtime: script")
    )
    done = subprocess.run(
        [sys.executable, "-m", "ballet", "validate", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == (
        f"{path}:2:75: Ballet sets `TMPDIR` for every session: each session has a TMPDIR "
        "of its own (`tmp` beside its report, removed with the session), so that a CLI's "
        "temporary files stay inside the session; remove TMPDIR from `env:`; a program "
        "needing scratch space uses $TMPDIR as given\n"
    )


def test_aider_pythonpath_and_opencode_config_merge_and_codex_key_is_kept() -> None:
    for adapter, name in (
        ("aider", "PYTHONPATH"),
        ("opencode", "OPENCODE_CONFIG_CONTENT"),
        ("codex", "CODEX_API_KEY"),
    ):
        config = valid(runtime_file(adapter, name, base_url=True))  # type: ignore[arg-type]
        assert config.runtimes["r"].env == (name,)


def test_an_endpoint_variable_is_refused_only_beside_base_url() -> None:
    # Without `base_url:` Ballet sets no ANTHROPIC_BASE_URL: the declared one is the endpoint.
    valid(runtime_file("claude-code", "ANTHROPIC_BASE_URL"))
    error = only_error(runtime_file("claude-code", "ANTHROPIC_BASE_URL", base_url=True))
    assert "for `claude-code` runtimes with provider keys or `base_url:`" in error.message
    assert "give the endpoint once: remove ANTHROPIC_BASE_URL from `env:`" in error.message


def test_a_variable_another_adapter_owns_is_no_concern_of_this_one() -> None:
    valid(runtime_file("claude-code", "PYTHONPATH", "OPENCODE_DISABLE_SHARE", "IS_SANDBOX_X"))
    valid(runtime_file("gemini", "IS_SANDBOX", "LITELLM_LOCAL_MODEL_COST_MAP"))


def test_each_refused_entry_gets_its_own_error() -> None:
    text = runtime_file("opencode", "TMPDIR", "OPENCODE_DISABLE_SHARE", "HTTPS_PROXY")
    result = parse_config(text)
    assert isinstance(result, list)
    assert [(e.line, e.column) for e in result] == [
        entry_position(text, name) for name in ("TMPDIR", "OPENCODE_DISABLE_SHARE", "HTTPS_PROXY")
    ]
    assert "egress:" in result[2].message
