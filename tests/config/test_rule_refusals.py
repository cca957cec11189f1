"""Refusals of well-typed files that break DESIGN section 3's rules, each at its node."""

from __future__ import annotations

from ballet.core.validate import parse_config
from config_helpers import only_error, valid

RUNTIMES = "runtimes:\n  claude: {adapter: claude-code}\n  codex: {adapter: codex}\n"


def pipeline(*stages: str, head: str = "", extra: str = "") -> str:
    """A file with one `default` pipeline whose stages are the given flow mappings."""
    lines = "".join(f"      - {stage}\n" for stage in stages)
    return f"{head}pipelines:\n  default:\n{extra}    stages:\n{lines}"


def at(text: str, line: int, needle: str) -> tuple[int, int]:
    """(line, column) of the first `needle` on 1-based `line` of `text`."""
    return line, text.splitlines()[line - 1].index(needle) + 1


def position(text: str, **kwargs: object) -> tuple[tuple[int, int], str]:
    error = only_error(text, **kwargs)
    return (error.line, error.column), error.message


MERGE = "{id: integrate, kind: platform, action: merge, next: {merged: $done}}"


def test_unknown_default_runtime() -> None:
    text = RUNTIMES + "default_runtime: claud\n"
    where, message = position(text)
    assert where == at(text, 4, "claud\n"[:-1]) == (4, 18)
    assert message == (
        "unknown runtime `claud`; write one of `claude`, `codex` or define it under `runtimes:`"
    )


def test_command_runtime_needs_a_command() -> None:
    text = "runtimes:\n  script: {adapter: command}\n"
    where, message = position(text)
    assert where == (2, 21)
    assert "needs `command: [program, args...]`" in message


def test_unknown_role_runtime_and_skill() -> None:
    text = RUNTIMES + "roles:\n  sec: {runtime: gpt, skills: [reviewer, audit]}\n"
    result = parse_config(text)
    assert isinstance(result, list)
    assert [(e.line, e.column) for e in result] == [at(text, 5, "gpt"), at(text, 5, "audit")]
    assert result[0].message.startswith("unknown runtime `gpt`; write one of `claude`, `codex`")
    assert result[1].message == (
        "unknown skill `audit`; write one of `implementer`, `integrator`, `reviewer`, "
        "`verifier` or add .ballet/skills/audit.md"
    )


def test_custom_skill_names_are_accepted_when_given() -> None:
    text = "roles:\n  sec: {skills: [audit]}\n" + pipeline(MERGE)
    assert valid(text, skills={"audit"}).roles["sec"].skills == ("audit",)


def test_unknown_type_pipeline() -> None:
    text = "types:\n  - {label: docs, pipeline: doc}\n" + pipeline(MERGE)
    where, message = position(text)
    assert where == at(text, 2, "doc}")
    assert message == "unknown pipeline `doc`; write one of `default`"


def test_unknown_signoff_role() -> None:
    text = pipeline(MERGE, extra="    signoffs: [security]\n")
    where, message = position(text)
    assert where == at(text, 3, "security")
    assert (
        message
        == "unknown role `security`; write one of (none defined) or define it under `roles:`"
    )


def test_branch_with_unknown_placeholder() -> None:
    text = pipeline(MERGE, extra='    branch: "ballet/{issue}-{slug}"\n')
    where, message = position(text)
    assert where == at(text, 3, '"')
    assert message == "unknown branch placeholder `{issue}`; use only {ticket}, {slug}, {type}"


def test_branch_with_unbalanced_brace() -> None:
    text = pipeline(MERGE, extra='    branch: "ballet/{ticket"\n')
    where, message = position(text)
    assert where == at(text, 3, '"')
    assert message.startswith("unbalanced `{` or `}`")


def test_branch_with_all_placeholders_or_none_is_valid() -> None:
    valid(pipeline(MERGE, extra='    branch: "{type}/{ticket}-{slug}"\n'))
    assert valid(pipeline(MERGE, extra="    branch: null\n")).pipelines["default"].branch is None


def test_pipeline_without_stages() -> None:
    text = "pipelines:\n  default:\n    stages: []\n"
    where, message = position(text)
    assert where == (3, 13)
    assert message == "a pipeline needs at least one stage; add a stage"


def test_duplicate_stage_id() -> None:
    text = pipeline(
        "{id: a, kind: agent, runtime: claude}", MERGE, "{id: a, kind: agent}", head=RUNTIMES
    )
    where, message = position(text)
    assert where == at(text, 9, "a,")
    assert message == "duplicate stage id `a`; give this stage another id"


def test_human_stage_takes_no_runtime() -> None:
    text = pipeline(
        "{id: ok, kind: human, runtime: claude, next: {approve: integrate}}", MERGE, head=RUNTIMES
    )
    where, message = position(text)
    assert where == at(text, 7, "runtime")
    assert message == "a human stage runs no agent, so it takes no `runtime`; remove it"


def test_platform_stage_takes_no_phases() -> None:
    text = pipeline("{id: ci, kind: platform, wait_for: checks, phases: [plan]}", MERGE)
    where, message = position(text)
    assert where == at(text, 4, "phases")
    assert "takes no `phases`" in message


def test_platform_stage_needs_action_or_wait_for() -> None:
    text = pipeline("{id: ci, kind: platform}", MERGE)
    where, message = position(text)
    assert where == at(text, 4, "{")
    assert message == (
        "a platform stage needs exactly one of `action: merge` or "
        "`wait_for: checks|review|merge`; keep one"
    )


def test_platform_stage_cannot_have_both() -> None:
    text = pipeline("{id: ci, kind: platform, action: merge, wait_for: checks}", MERGE)
    where, message = position(text)
    assert where == at(text, 4, "{")
    assert "exactly one of" in message


def test_agent_stage_takes_no_action() -> None:
    text = pipeline("{id: a, kind: agent, wait_for: review}", MERGE)
    where, message = position(text)
    assert where == at(text, 4, "wait_for")
    assert message == "only platform stages take `wait_for`; remove it or write `kind: platform`"


def test_unknown_stage_runtime() -> None:
    text = pipeline("{id: a, kind: agent, runtime: gemini}", MERGE, head=RUNTIMES)
    where, message = position(text)
    assert where == at(text, 7, "gemini")
    assert message.startswith("unknown runtime `gemini`; write one of `claude`, `codex`")


def test_unknown_stage_skill() -> None:
    text = pipeline("{id: a, kind: agent, skills: [implementer, writer]}", MERGE)
    where, message = position(text)
    assert where == at(text, 4, "writer")
    assert "add .ballet/skills/writer.md" in message


def test_optional_stage_needs_next() -> None:
    text = pipeline("{id: ok, kind: human, optional: true}", MERGE)
    where, message = position(text)
    assert where == at(text, 4, "{")
    assert "add a `next:` mapping" in message


def test_unknown_next_target() -> None:
    text = pipeline("{id: a, kind: agent, next: {done: reveiw}}", MERGE)
    where, message = position(text)
    assert where == at(text, 4, "reveiw")
    assert (
        message
        == "unknown target `reveiw`; write one of `$done`, `$failed`, `$question`, `a`, `integrate`"
    )


def test_unknown_terminal_target() -> None:
    text = pipeline("{id: a, kind: agent, next: {done: $finished}}", MERGE)
    where, _ = position(text)
    assert where == at(text, 4, "$finished")


def test_stage_nothing_reaches() -> None:
    text = pipeline(
        "{id: a, kind: agent, next: {done: integrate}}",
        "{id: orphan, kind: agent}",
        MERGE,
    )
    where, message = position(text)
    assert where == at(text, 5, "{")
    assert message == (
        "no path reaches stage `orphan`; name it in an earlier stage's `next` or remove it"
    )


def test_pipeline_that_never_reaches_done() -> None:
    text = pipeline(
        "{id: a, kind: agent, next: {done: b}}",
        "{id: b, kind: agent, next: {done: a, fail: $failed}}",
    )
    where, message = position(text)
    assert where == (4, 7)
    assert message.startswith("this pipeline can never reach `$done`")


def test_implicit_done_reaches_following_stages_and_the_end() -> None:
    # No `next` anywhere: done flows a -> b -> off the end, which is `$done`.
    valid(pipeline("{id: a, kind: agent}", "{id: b, kind: agent}"))


def test_every_problem_in_a_file_is_reported() -> None:
    text = pipeline(
        "{id: a, kind: agent, runtime: x, next: {done: nowhere}}", head="default_runtime: y\n"
    )
    result = parse_config(text)
    assert isinstance(result, list)
    assert [e.line for e in result] == [1, 5, 5]


def test_command_on_an_adapter_runtime() -> None:
    text = "runtimes:\n  claude: {adapter: claude-code, command: [claude, -p]}\n"
    where, message = position(text)
    assert where == at(text, 2, "command:")
    assert message == (
        "the claude-code adapter builds its own command line; remove `command` "
        "or write `adapter: command`"
    )


def test_duplicate_type_label_never_applies() -> None:
    text = "types:\n  - {label: docs, pipeline: default}\n  - {label: Docs, pipeline: default}\n"
    text += pipeline(MERGE)
    where, message = position(text)
    assert where == at(text, 3, "Docs")
    assert message.startswith("label `Docs` is already matched by an earlier entry")
