"""The table of variables Ballet sets (core/runtime_env.py) against what the adapters and
the confinement really set: an adapter (or the proxy) setting a variable its table does
not list fails here, and so does a listed variable nothing sets any more."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest
from ballet.core.config import Adapter, Runtime
from ballet.core.runtime_env import ADAPTERS, SESSION, fixed_values, owned_variables
from ballet.sessions.confine.session import proxy_environment
from ballet.sessions.environment import session_environment
from ballet.sessions.runtimes import ADAPTERS as RUNTIME_ADAPTERS
from ballet.sessions.runtimes import Invocation, RuntimeConfigError

# Every declared variable an adapter reads, so each branch of each adapter runs.
DECLARED = {
    "OPENAI_API_KEY": "sk-openai",
    "CODEX_API_KEY": "sk-codex",
    "GEMINI_API_KEY": "gemini",
    "OPENCODE_CONFIG_CONTENT": '{"instructions": ["AGENTS.md"]}',
    "PYTHONPATH": "/opt/site",
}


def invocations(tmp_path: Path) -> list[tuple[bool, Invocation]]:
    made = []
    for base_url in (None, "http://llm.internal/v1"):
        for declared in ({}, DECLARED):
            invocation = Invocation(
                "p", tmp_path / "prompt.md", tmp_path / "report.json", tmp_path, tmp_path,
                "local/qwen3-coder", "high", tmp_path, base_url=base_url, declared=declared,
            )  # fmt: skip
            made.append((base_url is not None, invocation))
    return made


def test_every_adapter_has_its_table() -> None:
    assert set(ADAPTERS) == set(typing.get_args(Adapter)) == set(RUNTIME_ADAPTERS)


@pytest.mark.parametrize("adapter", list(RUNTIME_ADAPTERS))
def test_an_adapter_sets_exactly_the_variables_its_table_lists(
    adapter: Adapter, tmp_path: Path
) -> None:
    owned = owned_variables(adapter)
    seen: set[str] = set()
    for base_url, invocation in invocations(tmp_path):
        env = RUNTIME_ADAPTERS[adapter].environment(invocation)
        allowed = {
            name
            for name, v in owned.items()
            if v.applies(base_url=base_url) and not v.by_confinement
        }
        assert set(env) <= allowed, f"{adapter} sets {set(env) - allowed}, not in its table"
        for name, value in fixed_values(adapter).items():
            assert env[name] == value
        seen |= set(env)
    listed = {name for name, v in owned.items() if not v.by_confinement}
    assert listed <= seen, f"{adapter}'s table lists {listed - seen}, which it never sets"


def test_the_confinement_sets_exactly_the_proxy_variables_the_table_lists() -> None:
    assert set(proxy_environment(3128)) == {v.name for v in SESSION if v.by_confinement}


def test_a_declared_variable_is_merged_or_kept_never_replaced(tmp_path: Path) -> None:
    _, invocation = invocations(tmp_path)[-1]  # base_url and every declared variable
    opencode = RUNTIME_ADAPTERS["opencode"].environment(invocation)
    config = json.loads(opencode["OPENCODE_CONFIG_CONTENT"])
    assert config["instructions"] == ["AGENTS.md"] and config["autoupdate"] is False
    aider = RUNTIME_ADAPTERS["aider"].environment(invocation)
    assert aider["PYTHONPATH"] == f"{tmp_path / 'aider-site'}:/opt/site"
    codex = RUNTIME_ADAPTERS["codex"].environment(invocation)
    assert codex["CODEX_API_KEY"] == DECLARED["CODEX_API_KEY"]


def environment(runtime: Runtime, adapter_env: dict[str, str], **parent: str) -> dict[str, str]:
    return session_environment(
        {"PATH": "/usr/bin", **parent},
        runtime=runtime,
        adapter_env=adapter_env,
        ballet_env={},
        home=Path("/home/session"),
    )


def test_a_runtime_from_the_settings_declaring_tmpdir_is_refused_at_session_start() -> None:
    # BALLET_DEFAULT_RUNTIME_ENV never goes through `ballet validate`.
    runtime = Runtime(adapter="claude-code", env=("ANTHROPIC_API_KEY", "TMPDIR"))
    with pytest.raises(RuntimeConfigError, match=r"Ballet sets `TMPDIR` for every session: .*"):
        environment(runtime, {"TMPDIR": "/s/tmp"}, TMPDIR="/var/tmp", ANTHROPIC_API_KEY="k")


def test_an_adapter_replacing_a_declared_variable_it_does_not_list_fails_the_session() -> None:
    # What a new adapter variable missing from the table would do: fail loudly, never
    # replace the declared value silently.
    runtime = Runtime(adapter="command", command=("agent",), env=("FEATURE_FLAGS",))
    with pytest.raises(RuntimeConfigError, match="sets FEATURE_FLAGS itself"):
        environment(runtime, {"FEATURE_FLAGS": "ballet"}, FEATURE_FLAGS="mine")
    assert environment(runtime, {}, FEATURE_FLAGS="mine")["FEATURE_FLAGS"] == "mine"


def test_a_merged_variable_arrives_as_the_adapter_merged_it() -> None:
    runtime = Runtime(adapter="aider", env=("PYTHONPATH",))
    env = environment(runtime, {"PYTHONPATH": "/s/aider-site:/opt/site"}, PYTHONPATH="/opt/site")
    assert env["PYTHONPATH"] == "/s/aider-site:/opt/site"
