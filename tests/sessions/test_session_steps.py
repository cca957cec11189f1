"""Each CLI's real event stream rendered as readable steps.

The fixtures in tests/fixtures/session-events/ are what the pinned CLIs printed
in a real session (captured through `run_session` against a scripted model,
the one tests/model_server.py plays, told to look around, write a file with
the CLI's own tool, run a command that fails, commit and report): the model's
turns, its tool calls with their commands and exit codes, the file it wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ballet.sessionlog.clis import renderer_for
from ballet.sessionlog.steps import MAX_STEPS, Step, render_aider_history, render_lines
from hypothesis import given, settings
from hypothesis import strategies as st

EVENTS = Path(__file__).resolve().parents[1] / "fixtures" / "session-events"
TURNS = [
    "I look at the repository first.",
    "Now I write the greeting.",
    "Let me check the tests.",
    "No tests; I commit and report.",
    "Done: greeting.txt says hello.",
]


def rendered(adapter: str) -> list[Step]:
    text = (EVENTS / f"{adapter}.jsonl").read_text()
    clone = re.search(r"/tmp/tmp\w+/ws/sessions/[^/]+/repo", text)
    assert clone is not None
    return render_lines(renderer_for(adapter, cwd=clone.group()), text.splitlines(), "stdout")


@pytest.mark.parametrize("adapter", ["claude-code", "codex", "gemini", "opencode"])
def test_a_clis_events_become_turns_tool_calls_and_edits(adapter: str) -> None:
    steps = rendered(adapter)
    assert [s.title for s in steps if s.kind == "turn"] == TURNS
    tools = [s for s in steps if s.kind == "tool"]
    assert [s.title for s in tools[:2]] == ["$ ls && cat README.md", "$ ls tests"]
    assert tools[2].title.startswith(
        "$ git add greeting.txt && git commit -q -m 'Add greeting.txt'"
    )
    assert "README.md\n# demo" in tools[0].body
    assert "No such file or directory" in tools[1].body
    edits = [s for s in steps if s.kind == "edit"]
    assert [s.title for s in edits] == ["greeting.txt"]
    if adapter == "gemini":  # its events carry no exit code
        assert [s.exit_code for s in tools] == [None, None, None]
    else:
        assert [s.exit_code for s in tools] == [0, 2, 0]
    if adapter != "codex":  # codex's file_change names the file, not its text
        assert "hello from the model" in edits[0].body
    # In the order they happened, each at the line it started on.
    order = [s.title for s in steps if s.kind in ("turn", "tool", "edit")]
    assert order.index(TURNS[1]) < order.index("greeting.txt") < order.index(TURNS[2])
    seqs = [s.seq for s in steps]
    assert seqs == sorted(seqs)
    assert not [s for s in steps if s.kind == "output"]  # every line was an event


def test_each_cli_says_how_it_ended() -> None:
    claude = rendered("claude-code")
    assert claude[0].title == "Claude Code 2.1.332, model claude-sonnet-4-5"
    assert claude[-1].title.startswith("finished: success after 5 turns, $0.06")
    assert rendered("gemini")[-1].title == "finished: success, 4 tool calls"
    codex = rendered("codex")
    assert codex[0].kind == "note" and codex[0].title.startswith("error: Model metadata")


def test_aiders_chat_history_becomes_its_turn_its_edit_and_its_commit() -> None:
    steps = render_aider_history((EVENTS / "aider-chat.md").read_text()).steps()
    kinds = [(s.kind, s.title) for s in steps]
    assert ("turn", "I add the file.") in kinds
    assert ("edit", "greeting.txt") in kinds
    assert ("note", "Commit 54b6e9f feat: add greeting.txt") in kinds
    turn = next(s for s in steps if s.kind == "turn")
    assert ">>>>>>> REPLACE" in turn.body and '{"outcome": "done"' in turn.body
    assert not any("Ballet session: implement" in s.body for s in steps)  # the prompt


def test_plain_output_and_stderr_are_output_steps() -> None:
    lines = (EVENTS / "aider.out").read_text().splitlines()
    renderer = renderer_for("aider")
    renderer.feed("stdout", 0, lines)
    errors = (EVENTS / "gemini.err").read_text().splitlines()
    renderer.feed("stderr", len(lines), errors)
    steps = renderer.steps()
    assert [(s.kind, s.stream) for s in steps] == [("output", "stdout"), ("output", "stderr")]
    assert (
        steps[0].title == "Warning: openai/gpt-4.1 does not support 'reasoning_effort', ignoring."
    )
    assert "Applied edit to greeting.txt" in steps[0].body
    assert steps[1].seq == len(lines)


def test_lines_that_are_no_event_are_output_between_the_events() -> None:
    lines = [
        '{"type":"item.completed","item":{"id":"1","type":"agent_message","text":"hi"}}',
        "npm warn deprecated something",
        "[1, 2, 3]",
        '{"type": "a_new_kind_of_event", "detail": 1}',
        '{"type":"item.completed","item":{"id":"2","type":"agent_message","text":"bye"}}',
    ]
    steps = render_lines(renderer_for("codex"), lines, "stdout")
    assert [(s.kind, s.title) for s in steps] == [
        ("turn", "hi"),
        ("output", "npm warn deprecated something"),
        ("note", "a_new_kind_of_event"),
        ("turn", "bye"),
    ]
    assert steps[1].body == "npm warn deprecated something\n[1, 2, 3]"
    assert '"detail": 1' in steps[2].body  # an unknown event is shown raw
    assert [s.seq for s in steps] == [0, 1, 3, 4]


def test_steps_are_bounded() -> None:
    lines = [
        json.dumps({"type": "item.completed", "item": {"id": str(i), "type": "agent_message",
                    "text": f"turn {i} " + "x" * 10_000}})
        for i in range(MAX_STEPS + 50)
    ]  # fmt: skip
    steps = render_lines(renderer_for("codex"), lines, "stdout")
    assert len(steps) == MAX_STEPS + 1
    assert steps[-1].title == "50 more lines not rendered as steps; the log has them"
    assert all(len(s.body) < 4200 for s in steps)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)
KNOWN_TYPES = [
    "system", "assistant", "user", "result", "thread.started", "item.started",
    "item.completed", "turn.failed", "error", "init", "message", "tool_use",
    "tool_result", "text", "reasoning", "step_start", "step_finish",
]  # fmt: skip
FIELDS = ["message", "item", "part", "content", "state", "error", "stats", "parameters", "role"]


@settings(max_examples=300, deadline=None)
@given(
    adapter=st.sampled_from(["claude-code", "codex", "gemini", "opencode", "aider", "command"]),
    kind=st.sampled_from(KNOWN_TYPES) | st.text(),
    fields=st.dictionaries(st.sampled_from(FIELDS) | st.text(), JSON, max_size=4),
)
def test_no_event_however_malformed_makes_rendering_fail(
    adapter: str, kind: str, fields: dict[str, object]
) -> None:
    line = json.dumps({"type": kind, **fields})
    steps = render_lines(renderer_for(adapter), [line, line, "plain"], "stdout")
    assert all(isinstance(step, Step) for step in steps)
    render_aider_history(f"> {line}\n{line}\n#### {line}\n```\n")
