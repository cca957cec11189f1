"""Refusals before any model is built: size, emptiness, YAML syntax, aliases, keys."""

from __future__ import annotations

from ballet.core.validate import MAX_FILE_BYTES, parse_config
from ballet.core.yaml_positions import MAX_EXPANDED_NODES, load
from config_helpers import only_error


def test_error_renders_as_file_line_column_message() -> None:
    error = only_error("pipelines: [\n", file="repo/.ballet.yml")
    assert str(error) == f"repo/.ballet.yml:2:1: {error.message}"


def test_yaml_syntax_error_points_at_the_problem() -> None:
    error = only_error("trigger_label: ballet\npolicy: {review: agent\n")
    assert (error.line, error.column) == (3, 1)
    assert error.message.startswith("YAML syntax error")
    assert "indentation, quotes, brackets" in error.message


def test_several_documents_are_refused() -> None:
    error = only_error("trigger_label: a\n---\ntrigger_label: b\n")
    assert (error.line, error.column) == (2, 1)
    assert "one document only" in error.message


def test_unreadable_character_is_refused() -> None:
    error = only_error("trigger_label: \x01\n")
    assert (error.line, error.column) == (1, 1)
    assert "UTF-8" in error.message


def test_empty_file_is_refused_with_the_way_out() -> None:
    for text in ("", "\n\n", "# only a comment\n", "---\n"):
        error = only_error(text)
        assert (error.line, error.column) == (1, 1)
        assert "empty" in error.message and "built-in default" in error.message


def test_file_over_the_size_limit_is_refused() -> None:
    text = "trigger_label: ballet\n" + "#" * MAX_FILE_BYTES
    error = only_error(text)
    assert (error.line, error.column) == (1, 1)
    assert "256 KB" in error.message


def test_file_at_the_size_limit_is_read() -> None:
    text = "trigger_label: ballet\n"
    text += "#" * (MAX_FILE_BYTES - len(text))
    assert not isinstance(parse_config(text), list)


def test_top_level_must_be_a_mapping() -> None:
    error = only_error("- pipelines\n")
    assert (error.line, error.column) == (1, 1)
    assert "must be a mapping" in error.message


def test_billion_laughs_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    error = only_error("\n".join(lines) + "\n")
    assert str(MAX_EXPANDED_NODES) in error.message
    assert "aliases" in error.message
    assert (error.line, error.column) == (5, 1)  # a4: 10**5 nodes, the first past the bound


def test_small_aliases_are_expanded() -> None:
    document = load("a: &env [X, Y]\nb: *env\n")
    assert document.value == {"a": ["X", "Y"], "b": ["X", "Y"]}


def test_recursive_alias_is_refused() -> None:
    error = only_error("trigger_label: ballet\napprovers: &a [*a]\n")
    assert (error.line, error.column) == (2, 12)
    assert "refers to the node that contains it" in error.message


def test_duplicate_key_is_refused_at_the_second_key() -> None:
    error = only_error("trigger_label: a\ntrigger_label: b\n")
    assert (error.line, error.column) == (2, 1)
    assert "duplicate key `trigger_label`" in error.message


def test_complex_key_is_refused() -> None:
    error = only_error("? [a, b]\n: c\n")
    assert (error.line, error.column) == (1, 3)
    assert "plain word" in error.message


def test_tags_and_merge_keys_are_refused() -> None:
    error = only_error("trigger_label: !custom ballet\n")
    assert (error.line, error.column) == (1, 16)
    assert "!tags" in error.message
    error = only_error("base: &b {version: 2}\npipelines:\n  x:\n    <<: *b\n")
    assert (error.line, error.column) == (4, 5)
    assert error.message == "YAML merge keys (`<<`) are not supported; write the keys out"


def test_impossible_date_is_refused() -> None:
    error = only_error("trigger_label: 2024-13-45\n")
    assert (error.line, error.column) == (1, 16)
    assert "2024-13-45" in error.message


def test_position_of_an_unwritten_path_falls_back_to_its_ancestor() -> None:
    document = load("a:\n  b: 1\n")
    assert document.position(("a", "b", "c")) == (2, 6)
    assert document.position(("a", "b"), key=True) == (2, 3)
    assert document.position(("z",)) == (1, 1)
    assert load("").position(("a",)) == (1, 1)
