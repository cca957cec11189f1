"""Every flag an adapter passes exists in its real CLI's `--help` (of the subcommand
the adapter runs), with every option the adapter can add (model, effort, base_url)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from agent_clis import require_cli
from ballet.core.config import Adapter, Runtime
from ballet.sessions.runtimes import Invocation, adapter_for

CASES: list[tuple[Adapter, str, list[str], str | None]] = [
    ("claude-code", "claude", [], "claude-sonnet-4-5"),
    ("codex", "codex", ["exec"], "gpt-5.1-codex"),
    ("gemini", "gemini", [], "gemini-2.5-pro"),
    ("opencode", "opencode", ["run"], "ballet/fake-model"),
    ("aider", "aider", [], "openai/gpt-4.1"),
]


def flags_of(argv: list[str]) -> set[str]:
    """The option names in an argv, up to `--` (after it: the prompt)."""
    names = set()
    for word in argv[: argv.index("--")] if "--" in argv else argv:
        if re.fullmatch(r"--?[A-Za-z][\w-]*", word):
            names.add(word)
    return names


@pytest.mark.parametrize(("adapter", "executable", "subcommand", "model"), CASES)
def test_every_flag_an_adapter_passes_is_in_the_cli_help(
    tmp_path: Path,
    cli_path: str,
    adapter: Adapter,
    executable: str,
    subcommand: list[str],
    model: str,
) -> None:
    path = require_cli(executable)
    invocation = Invocation(
        prompt="--not-a-flag: the prompt",
        prompt_path=tmp_path / "prompt.md",
        report_path=tmp_path / "report.json",
        files_dir=tmp_path,
        workdir=tmp_path,
        model=model,
        effort="high",
        home=tmp_path,
        base_url="http://127.0.0.1:9/v1",
        declared={"OPENAI_API_KEY": "k"},
    )
    runtime = Runtime(adapter=adapter, model=model, effort="high")
    argv = adapter_for(adapter).argv(runtime, invocation)
    # The prompt is one word of the argv, never taken for a flag.
    assert flags_of(argv)
    home = tmp_path / "home"
    home.mkdir()
    shown = subprocess.run(
        [str(path), *subcommand, "--help"],
        capture_output=True,
        text=True,
        env={"PATH": cli_path, "HOME": str(home), "TMPDIR": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    help_text = shown.stdout + shown.stderr
    known = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_text))
    unknown = sorted(flags_of(argv[1:]) - known)
    assert not unknown, f"{executable} {' '.join(subcommand)} --help lists no {unknown}"
