"""Phases as designed: each once, in order research → plan → implement → verify, refused
at the entry's line and column otherwise; the top-level `phases:` knobs; a role's own
`model` and `effort`; a pipeline's `name:`."""

from __future__ import annotations

from ballet.core.config import Runtime
from ballet.core.resolve import resolve_pipeline
from ballet.core.validate import parse_config
from config_helpers import DESIGN_EXAMPLE, only_error, valid

RUNTIME = "runtimes:\n  claude: {adapter: claude-code}\ndefault_runtime: claude\n"


def phased(phases: str, head: str = "") -> str:
    return (
        RUNTIME + head + "pipelines:\n  default:\n    stages:\n"
        f"      - {{id: implement, kind: agent, phases: {phases}}}\n"
    )


def test_a_phase_listed_twice_is_refused_at_the_second() -> None:
    text = phased("[implement, implement]")
    error = only_error(text)
    line = text.splitlines()[error.line - 1]
    assert (error.line, error.column) == (7, line.rindex("implement]") + 1)
    assert error.message == (
        "phase `implement` is listed twice; each phase runs once: remove this one"
    )


def test_a_phase_out_of_order_is_refused_where_it_stands() -> None:
    text = phased("[research, implement, plan]")
    error = only_error(text)
    assert (error.line, error.column) == (7, text.splitlines()[6].index("plan]") + 1)
    assert error.message == (
        "phase `plan` comes after `implement`, but phases run in the order "
        "research → plan → implement → verify; list them in that order"
    )


def test_phases_in_order_validate_whole_or_in_part() -> None:
    for phases in ("[research, plan, implement, verify]", "[plan, verify]", "[implement]"):
        valid(phased(phases))


def test_phases_can_be_turned_off_for_every_pipeline() -> None:
    config = valid(phased("[research, plan, implement]", head="phases: {enabled: false}\n"))
    resolved = resolve_pipeline(config, ())
    assert resolved.stage("implement").phases == ()
    assert resolved.phase_settings.enabled is False
    on = resolve_pipeline(valid(phased("[research, plan]")), ())
    assert on.stage("implement").phases == ("research", "plan")


def test_the_artefact_knobs_are_pinned_with_the_pipeline() -> None:
    head = "phases: {artefact_path: .ballet/handoffs, gc_on_close: false}\n"
    resolved = resolve_pipeline(valid(phased("[plan, implement]", head=head)), ())
    assert resolved.phase_settings.artefact_path == ".ballet/handoffs"
    assert resolved.phase_settings.gc_on_close is False
    default = resolve_pipeline(valid(phased("[plan, implement]")), ())
    assert default.phase_settings.artefact_path is None and default.phase_settings.gc_on_close


def test_an_artefact_path_outside_the_clone_is_refused_at_its_value() -> None:
    for path in ("../elsewhere", "/etc", "a/.git/hooks", "a//b", "'x y'"):
        text = phased("[plan]", head=f"phases: {{artefact_path: {path}}}\n")
        error = only_error(text)
        assert (error.line, error.column) == (4, text.splitlines()[3].index(path) + 1), path
        assert "write a relative directory inside the clone" in error.message
        assert "`.ballet/handoffs`" in error.message


def test_an_unknown_phases_knob_is_refused() -> None:
    error = only_error(phased("[plan]", head="phases: {gc_on_merge: true}\n"))
    assert error.line == 4 and "unknown key `gc_on_merge`" in error.message
    assert "did you mean `gc_on_close`?" in error.message


def test_a_role_takes_its_own_model_and_effort() -> None:
    text = (
        RUNTIME + "roles:\n  security: {model: opus, effort: high}\n"
        "pipelines:\n  default:\n    signoffs: [security]\n    stages:\n"
        "      - {id: implement, kind: agent}\n"
    )
    role = resolve_pipeline(valid(text), ()).roles["security"]
    assert (role.model, role.effort, role.runtime) == ("opus", "high", "claude")
    plain = resolve_pipeline(valid(text.replace("{model: opus, effort: high}", "{}")), ())
    assert (plain.roles["security"].model, plain.roles["security"].effort) == (None, None)


def test_a_command_runtime_takes_no_strongest_model() -> None:
    text = "runtimes:\n  script: {adapter: command, command: [a], strongest_model: big}\n"
    error = only_error(text)
    assert error.line == 2 and "`strongest_model` is for the agent CLIs" in error.message
    assert Runtime(adapter="codex", strongest_model="gpt-5-codex").strongest_model


def test_the_design_example_names_its_pipeline_and_the_name_is_pinned() -> None:
    assert "    name: Feature work\n" in DESIGN_EXAMPLE.read_text()
    config = valid(DESIGN_EXAMPLE.read_text())
    assert config.pipelines["default"].name == "Feature work"
    resolved = resolve_pipeline(config, ())
    assert (resolved.name, resolved.title) == ("default", "Feature work")
    assert isinstance(parse_config("pipelines: {default: {name: '', stages: []}}\n"), list)
