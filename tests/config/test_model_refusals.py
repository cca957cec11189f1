"""Refusals from the models' shapes, each pointed at the offending node."""

from __future__ import annotations

from ballet.core.validate import parse_config
from config_helpers import only_error


def test_unknown_top_level_key_suggests_the_nearest() -> None:
    error = only_error("trigger_label: ballet\nruntimez: {}\n")
    assert (error.line, error.column) == (2, 1)
    assert error.message == "unknown key `runtimez`; did you mean `runtimes`?"


def test_unknown_stage_key_points_at_the_key_and_suggests() -> None:
    text = "pipelines:\n  default:\n    stages:\n      - id: a\n        kind: agent\n"
    text += "        skils: []\n"
    error = only_error(text)
    assert (error.line, error.column) == (6, 9)
    assert error.message == (
        "unknown key `skils` in pipelines.default.stages[0]; did you mean `skills`?"
    )


def test_unknown_key_far_from_any_lists_the_valid_keys() -> None:
    error = only_error("policy: {review: agent, zzzzzz: 1}\n")
    assert (error.line, error.column) == (1, 25)
    assert error.message == "unknown key `zzzzzz` in policy; valid keys: merge, review"


def test_unknown_key_inside_a_named_runtime() -> None:
    error = only_error("runtimes:\n  claude: {adapter: claude-code, modle: opus}\n")
    assert (error.line, error.column) == (2, 34)
    assert "did you mean `model`?" in error.message


def test_unknown_key_inside_a_role_and_a_type() -> None:
    error = only_error("roles:\n  sec: {instruction: x}\n")
    assert (error.line, error.column) == (2, 9)
    assert "did you mean `instructions`?" in error.message
    result = parse_config("types:\n  - {label: docs, pipline: docs}\n")
    assert isinstance(result, list)
    assert [(e.line, e.column) for e in result] == [(2, 5), (2, 19)]
    assert result[0].message == "types[0]: missing required key `pipeline`; add `pipeline: …`"
    assert "did you mean `pipeline`?" in result[1].message


def test_wrong_type_names_the_path_and_what_to_write() -> None:
    error = only_error("approvers: octocat\n")
    assert (error.line, error.column) == (1, 12)
    assert error.message == "approvers: Input should be a valid tuple; write a list, e.g. `[a, b]`"


def test_number_where_text_is_expected() -> None:
    error = only_error("runtimes:\n  claude: {adapter: claude-code, model: 4}\n")
    assert (error.line, error.column) == (2, 41)
    assert error.message.startswith("runtimes.claude.model: Input should be a valid string")
    assert "quoted" in error.message


def test_bad_literal_lists_the_choices() -> None:
    error = only_error("policy: {merge: sometimes}\n")
    assert (error.line, error.column) == (1, 17)
    assert error.message == "policy.merge: Input should be 'approved', 'auto' or 'manual'"


def test_missing_required_key_points_at_the_parent() -> None:
    error = only_error("pipelines:\n  default:\n    stages:\n      - {id: a}\n")
    assert (error.line, error.column) == (4, 9)
    assert error.message == (
        "pipelines.default.stages[0]: missing required key `kind`; add `kind: …`"
    )


def test_non_text_mapping_key_points_at_the_key() -> None:
    error = only_error("runtimes:\n  1: {adapter: codex}\n")
    assert (error.line, error.column) == (2, 3)
    assert "runtimes[1]: Input should be a valid string" in error.message


def test_bad_stage_id_says_what_an_id_looks_like() -> None:
    error = only_error(
        "pipelines:\n  default:\n    stages:\n      - {id: Implement, kind: agent}\n"
    )
    assert (error.line, error.column) == (4, 14)
    assert "write a lowercase letter" in error.message


def test_iteration_limit_outside_1_to_20() -> None:
    for value, hint in (("0", "of at least 1"), ("21", "of at most 20")):
        text = f"pipelines:\n  default:\n    iteration_limit: {value}\n    stages: []\n"
        result = parse_config(text)
        assert isinstance(result, list)
        error = result[0]
        assert (error.line, error.column) == (3, 22)
        assert error.message.startswith("pipelines.default.iteration_limit: Input should be")
        assert error.message.endswith(f"; write a number {hint}")


def test_iteration_limit_not_a_number() -> None:
    text = "pipelines:\n  default:\n    iteration_limit: many\n    stages: []\n"
    result = parse_config(text)
    assert isinstance(result, list)
    assert (result[0].line, result[0].column) == (3, 22)
    assert "write a whole number" in result[0].message


def test_merge_key_is_explained() -> None:
    error = only_error("policy:\n  <<: {merge: auto}\n")
    assert (error.line, error.column) == (2, 3)
    assert "merge keys (`<<`) are not supported" in error.message


def test_several_errors_are_all_reported_in_order() -> None:
    result = parse_config("runtimez: {}\npolicy: {merge: never}\ntrigger_labl: x\n")
    assert isinstance(result, list)
    assert [(e.line, e.column) for e in result] == [(1, 1), (2, 17), (3, 1)]


def test_budget_bounds_name_the_bound() -> None:
    text = "pipelines:\n  default:\n    budget: {cost_usd: 0}\n    stages: []\n"
    result = parse_config(text)
    assert isinstance(result, list)
    assert (result[0].line, result[0].column) == (3, 24)
    assert result[0].message == (
        "pipelines.default.budget.cost_usd: Input should be greater than 0; write a number above 0"
    )


def test_a_session_cost_cap_must_be_above_zero() -> None:
    text = "pipelines:\n  default:\n    budget: {session_cost_usd: 0}\n    stages: []\n"
    result = parse_config(text)
    assert isinstance(result, list)
    assert result[0].message == (
        "pipelines.default.budget.session_cost_usd: Input should be greater than 0; "
        "write a number above 0"
    )


def test_unknown_key_under_a_non_text_runtime_name() -> None:
    result = parse_config("runtimes: {1: {adapter: codex, foo: 1}}\n")
    assert isinstance(result, list)
    assert [(e.line, e.column) for e in result] == [(1, 12), (1, 32)]
    assert result[1].message == (
        "unknown key `foo` in runtimes[1]; "
        "valid keys: adapter, base_url, command, effort, egress, env, keys, limits, model, pool, "
        "strongest_model"
    )


def test_env_entries_must_be_variable_names() -> None:
    error = only_error("runtimes:\n  codex: {adapter: codex, env: [OPENAI_API_KEY, OPENAI-KEY]}\n")
    assert (error.line, error.column) == (2, 49)
    assert error.message.startswith("runtimes.codex.env[1]: String should match pattern")
    assert error.message.endswith(
        "; write an environment variable name: letters, digits and `_`, not starting with a digit"
    )


def test_labels_must_be_non_empty_and_fit_github() -> None:
    error = only_error('trigger_label: ""\n')
    assert (error.line, error.column) == (1, 16)
    assert error.message.startswith("trigger_label: String should have at least 1 character")
    error = only_error(f"types:\n  - {{label: {'x' * 51}, pipeline: p}}\n")
    assert (error.line, error.column) == (2, 13)
    assert "at most 50 characters" in error.message


def test_mapping_expected_names_no_model_class() -> None:
    error = only_error("pipelines:\n  default:\n    stages: [implement]\n")
    assert (error.line, error.column) == (3, 14)
    assert error.message == (
        "pipelines.default.stages[0]: Input should be a valid dictionary; "
        "write a mapping of `key: value` entries"
    )


def test_yes_read_as_a_boolean_key_is_explained() -> None:
    text = "pipelines:\n  default:\n    stages:\n      - {id: a, kind: agent, next: {yes: a}}\n"
    error = only_error(text)
    assert (error.line, error.column) == (4, 37)
    assert "yes/no/on/off/true/false" in error.message


def test_egress_may_name_public_destinations_only() -> None:
    error = only_error("runtimes:\n  c: {adapter: claude-code, egress: [pypi.org, 10.0.0.1:443]}\n")
    assert (error.line, error.column) == (2, 48)
    assert error.message.startswith("runtimes.c.egress[1]:")
    assert "private" in error.message and "BALLET_SESSION_EGRESS_ALLOW" in error.message
