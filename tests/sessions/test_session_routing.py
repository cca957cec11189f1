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
