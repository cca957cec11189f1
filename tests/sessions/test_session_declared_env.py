"""A variable a runtime declares that its adapter sets too reaches the session's process
merged, never replaced (core/runtime_env.py): what the CLI received, as a fake of it
(session_fake_clis.py) records its environment inside the confined session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ballet.core.config import Runtime
from ballet.sessions import SessionOptions, Workspaces
from session_fake_clis import fake_cli
from session_helpers import MakeSpec, WriteScript, run

DECLARED_CONFIG = {
    "$schema": "https://opencode.ai/config.json",
    "instructions": ["CONTRIBUTING.md"],
    "permission": {"bash": {"*": "ask", "git push *": "deny"}},
    "autoupdate": True,
    "share": "auto",
    "provider": {
        "local": {
            "options": {
                "baseURL": "http://elsewhere.example/v1",
                "apiKey": "{env:LOCAL_LLM_KEY}",
                "headers": {"X-Team": "blue"},
            },
            "models": {"qwen3-coder": {"limit": {"context": 32768, "output": 4096}}},
        }
    },
}


def test_an_opencode_runtimes_own_config_reaches_the_cli_merged_with_ballets(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    log = observed / "cli.json"
    write_script("opencode", fake_cli("opencode", str(log)))
    env = {**parent_env, "OPENCODE_CONFIG_CONTENT": json.dumps(DECLARED_CONFIG)}
    runtime = Runtime(
        adapter="opencode",
        model="local/qwen3-coder",
        env=("OPENCODE_CONFIG_CONTENT",),
        base_url="http://llm.internal:8000/v1",
    )
    result = run(make_spec(runtime=runtime), workspaces, env, options)

    assert result.failure_reason is None, result.report.summary
    seen: dict[str, Any] = json.loads(log.read_text())["env"]
    assert json.loads(seen["OPENCODE_CONFIG_CONTENT"]) == {
        "$schema": "https://opencode.ai/config.json",
        "instructions": ["CONTRIBUTING.md"],  # the runtime's keys are kept
        "permission": {"bash": {"*": "ask", "git push *": "deny"}},
        "autoupdate": False,  # what Ballet needs is Ballet's
        "share": "disabled",
        "provider": {
            "local": {
                "npm": "@ai-sdk/openai-compatible",  # Ballet's defaults, where none is given
                "name": "local",
                "options": {
                    "baseURL": "http://llm.internal:8000/v1",  # where the egress proxy lets it
                    "apiKey": "{env:LOCAL_LLM_KEY}",  # a given key wins over Ballet's default
                    "headers": {"X-Team": "blue"},
                },
                "models": {
                    "qwen3-coder": {
                        "name": "qwen3-coder",
                        "limit": {"context": 32768, "output": 4096},
                    }
                },
            }
        },
    }
    assert seen["OPENCODE_DISABLE_SHARE"] == "true"


def test_an_opencode_config_that_is_not_a_json_object_fails_naming_it(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    write_script("opencode", fake_cli("opencode", str(observed / "cli.json")))
    runtime = Runtime(adapter="opencode", env=("OPENCODE_CONFIG_CONTENT",))
    for value, says in (
        ('{"share": "auto", // mine\n}', "is not valid JSON (Expecting"),
        ('["share"]', "is JSON but not an object"),
    ):
        env = {**parent_env, "OPENCODE_CONFIG_CONTENT": value}
        result = run(make_spec(runtime=runtime), workspaces, env, options)
        assert result.failure_reason == "runtime"
        assert f"OPENCODE_CONFIG_CONTENT, declared in the runtime's `env:`, {says}" in (
            result.report.summary
        )
        assert not (observed / "cli.json").exists()  # the CLI never started


def test_an_aider_runtimes_pythonpath_follows_ballets_meter_and_its_sitecustomize_runs(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
    bin_dir: Path,
) -> None:
    log = observed / "cli.json"
    write_script("aider", fake_cli("aider", str(log)))
    site = bin_dir / "site"  # on the worker's PATH's directory: readable in the sandbox
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"open({str(observed / 'ran')!r}, 'a').write('declared sitecustomize\\n')\n"
    )
    env = {**parent_env, "PYTHONPATH": str(site)}
    runtime = Runtime(adapter="aider", env=("ANTHROPIC_API_KEY", "PYTHONPATH"))
    result = run(make_spec(runtime=runtime), workspaces, env, options)

    assert result.failure_reason is None, result.report.summary
    seen = json.loads(log.read_text())["env"]
    ballets, declared = seen["PYTHONPATH"].split(":")
    assert ballets.endswith("/ballet/aider-site") and declared == str(site)
    # Once, after Ballet's (tests/runtimes: the real aider is still metered beside it).
    assert (observed / "ran").read_text() == "declared sitecustomize\n"
