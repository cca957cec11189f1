from __future__ import annotations

from ballet.sessions import route


def test_thinking_phases_get_the_strongest_model_and_high_effort() -> None:
    choice = route(
        "claude-code",
        "research",
        stage_model=None,
        stage_effort=None,
        runtime_model="sonnet",
        runtime_effort="low",
    )
    assert choice == ("opus", "high")


def test_doing_phases_and_unphased_stages_get_the_runtime_defaults() -> None:
    for phase in ("implement", "verify", None):
        choice = route(
            "claude-code",
            phase,
            stage_model=None,
            stage_effort=None,
            runtime_model="sonnet",
            runtime_effort="low",
        )
        assert choice == ("sonnet", "low")


def test_the_stage_own_model_and_effort_win_in_every_phase() -> None:
    for phase in ("plan", "implement"):
        choice = route(
            "claude-code",
            phase,
            stage_model="haiku",
            stage_effort="medium",
            runtime_model="sonnet",
            runtime_effort="low",
        )
        assert choice == ("haiku", "medium")


def test_adapters_without_a_strongest_alias_keep_the_runtime_model() -> None:
    choice = route(
        "codex", "plan", stage_model=None, stage_effort=None, runtime_model="gpt-x",
        runtime_effort=None,
    )  # fmt: skip
    assert choice == ("gpt-x", "high")


def test_every_runtime_that_chooses_a_model_follows_the_design_table() -> None:
    """Research and plan: the runtime's strongest model, high effort; implement and
    verify: its default model and effort; the stage's own win in every phase."""
    for adapter in ("claude-code", "codex", "aider", "gemini", "opencode"):
        for phase in ("research", "plan"):
            choice = route(
                adapter, phase, stage_model=None, stage_effort=None, runtime_model="m",
                runtime_effort="low", strongest_model="big",
            )  # fmt: skip
            assert choice == ("big", "high"), adapter
            own = route(
                adapter, phase, stage_model="mine", stage_effort="medium", runtime_model="m",
                runtime_effort="low", strongest_model="big",
            )  # fmt: skip
            assert own == ("mine", "medium"), adapter
        for phase in ("implement", "verify"):
            choice = route(
                adapter, phase, stage_model=None, stage_effort=None, runtime_model="m",
                runtime_effort="low", strongest_model="big",
            )  # fmt: skip
            assert choice == ("m", "low"), adapter


def test_without_a_strongest_model_the_adapter_alias_or_the_runtime_model_serves() -> None:
    claude = route(
        "claude-code", "plan", stage_model=None, stage_effort=None, runtime_model="sonnet",
        runtime_effort=None,
    )  # fmt: skip
    aider = route(
        "aider", "research", stage_model=None, stage_effort=None,
        runtime_model="anthropic/claude-sonnet-4-5", runtime_effort=None,
    )  # fmt: skip
    assert claude == ("opus", "high")
    assert aider == ("anthropic/claude-sonnet-4-5", "high")
