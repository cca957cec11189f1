"""How each adapter turns a runtime's configuration into the CLI's own: credentials
under the name the CLI reads, `base_url` where the CLI takes it, files in HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ballet.core.config import Runtime
from ballet.sessions.runtimes import Invocation, RuntimeConfigError, adapter_for
from ballet.sessions.runtimes.aider import report_from_reply


def invocation(tmp_path: Path, **values: object) -> Invocation:
    fields: dict[str, object] = {
        "prompt": "p",
        "prompt_path": tmp_path / "prompt.md",
        "report_path": tmp_path / "report.json",
        "files_dir": tmp_path,
        "workdir": tmp_path,
        "model": None,
        "effort": None,
        "home": tmp_path,
    }
    fields.update(values)
    return Invocation(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("declared", "key"),
    [
        ({"OPENAI_API_KEY": "openai"}, "openai"),
        ({"OPENAI_API_KEY": "openai", "CODEX_API_KEY": "codex"}, "codex"),
        ({}, None),
    ],
)
def test_codex_gets_the_declared_key_as_codex_api_key(
    tmp_path: Path, declared: dict[str, str], key: str | None
) -> None:
    env = adapter_for("codex").environment(invocation(tmp_path, declared=declared))
    assert env.get("CODEX_API_KEY") == key


def test_codex_base_url_is_a_provider_of_its_own_without_websockets(tmp_path: Path) -> None:
    inv = invocation(tmp_path, base_url="http://gw.internal/v1", model="gpt-5")
    argv = adapter_for("codex").argv(Runtime(adapter="codex"), inv)
    provider = next(a for a in argv if a.startswith("model_providers.ballet="))
    assert argv[argv.index(provider) - 1] == "-c"
    assert 'base_url="http://gw.internal/v1"' in provider
    assert "supports_websockets=false" in provider and 'env_key="CODEX_API_KEY"' in provider
    assert 'model_provider="ballet"' in argv
    assert "model_providers.ballet" not in " ".join(
        adapter_for("codex").argv(Runtime(adapter="codex"), invocation(tmp_path))
    )


def test_gemini_selects_api_key_auth_only_when_a_key_is_declared(tmp_path: Path) -> None:
    adapter = adapter_for("gemini")
    home = tmp_path / "home"
    home.mkdir()
    adapter.prepare(invocation(tmp_path, home=home, declared={"GEMINI_API_KEY": "k"}))
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    adapter.prepare(invocation(tmp_path, home=home, declared={}))
    assert "security" not in json.loads((home / ".gemini" / "settings.json").read_text())
    env = adapter.environment(invocation(tmp_path, base_url="https://gw/gemini"))
    assert env["GOOGLE_GEMINI_BASE_URL"] == "https://gw/gemini"


def test_opencode_base_url_goes_to_the_model_provider(tmp_path: Path) -> None:
    adapter = adapter_for("opencode")

    def config(model: str) -> dict[str, object]:
        env = adapter.environment(invocation(tmp_path, model=model, base_url="http://h/v1"))
        loaded: dict[str, object] = json.loads(env["OPENCODE_CONFIG_CONTENT"])
        return loaded

    assert config("anthropic/claude-sonnet-4-5")["provider"] == {
        "anthropic": {"options": {"baseURL": "http://h/v1"}}
    }
    local = config("local/qwen3-coder")["provider"]
    assert isinstance(local, dict)
    assert local["local"]["npm"] == "@ai-sdk/openai-compatible"
    assert local["local"]["models"] == {"qwen3-coder": {"name": "qwen3-coder"}}
    with pytest.raises(RuntimeConfigError, match="provider>/<model>"):
        config("qwen3-coder")


def test_aider_report_is_the_last_json_line_of_its_replies(tmp_path: Path) -> None:
    history = tmp_path / "chat.md"
    history.write_text(
        '#### {"outcome": "from the prompt"}\n\n'
        'I did it.\n\n{"outcome": "early", "summary": "a"}\n'
        '> {"outcome": "an aider note"}\n'
        '  {"outcome": "done", "summary": "last"}  \n'
        "> Tokens: 1k sent\n"
    )
    assert json.loads(report_from_reply(history) or "") == {"outcome": "done", "summary": "last"}
    history.write_text("#### only the prompt\n\nno report here\n")
    assert report_from_reply(history) is None
    assert report_from_reply(tmp_path / "missing.md") is None


def test_aider_writes_no_report_over_one_the_session_wrote(tmp_path: Path) -> None:
    (tmp_path / "aider-chat.md").write_text('{"outcome": "done", "summary": "reply"}\n')
    (tmp_path / "report.json").write_text('{"outcome": "done", "summary": "file"}')
    adapter_for("aider").after_exit(invocation(tmp_path))
    assert "file" in (tmp_path / "report.json").read_text()


def test_aider_report_never_goes_through_a_symlink_or_reads_a_fifo(tmp_path: Path) -> None:
    import os

    target = tmp_path / "outside.txt"
    (tmp_path / "aider-chat.md").write_text('{"outcome": "done", "summary": "reply"}\n')
    (tmp_path / "report.json").symlink_to(target)  # planted by the session
    adapter_for("aider").after_exit(invocation(tmp_path))
    assert not target.exists()
    os.mkfifo(tmp_path / "fifo.md")
    assert report_from_reply(tmp_path / "fifo.md") is None  # and does not block
