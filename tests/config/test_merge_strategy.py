"""`merge:` in `.ballet.yml`: a default at the top, overridden key by key per pipeline,
pinned with the pipeline, and refused at its line and column when it cannot work."""

from __future__ import annotations

from pathlib import Path

from ballet.core.config import MergeStrategy, Runtime
from ballet.core.resolve import resolve_pipeline
from ballet.core.validate import parse_config
from config_helpers import only_error, valid

MERGE = "{id: integrate, kind: platform, action: merge, next: {merged: $done}}"


def pipeline(extra: str = "", head: str = "") -> str:
    return f"{head}pipelines:\n  default:\n{extra}    stages:\n      - {MERGE}\n"


def at(text: str, line: int, needle: str) -> tuple[int, int]:
    return line, text.splitlines()[line - 1].index(needle) + 1


def resolved_merge(text: str) -> MergeStrategy:
    config = valid(text)
    runtime = Runtime(adapter="command", command=("true",))
    return resolve_pipeline(config, (), default_runtime=runtime).merge


def test_without_merge_a_ticket_squashes_and_deletes_its_branch() -> None:
    assert resolved_merge(pipeline()) == MergeStrategy(
        method="squash", delete_branch=True, commit_title=None
    )


def test_a_pipeline_overrides_the_default_key_by_key() -> None:
    head = 'merge: {method: merge, commit_title: "{title} (#{pr})"}\n'
    text = pipeline("    merge: {delete_branch: false}\n", head=head)
    assert resolved_merge(text) == MergeStrategy(
        method="merge", delete_branch=False, commit_title="{title} (#{pr})"
    )


def test_the_strategy_is_pinned_in_the_pipeline_hash() -> None:
    runtime = Runtime(adapter="command", command=("true",))
    squash = resolve_pipeline(valid(pipeline()), (), default_runtime=runtime)
    rebase = resolve_pipeline(
        valid(pipeline("    merge: {method: rebase}\n")), (), default_runtime=runtime
    )
    assert squash.hash != rebase.hash


def test_an_unknown_method_is_refused_at_its_value() -> None:
    text = pipeline("    merge: {method: fast-forward}\n")
    error = only_error(text)
    assert (error.line, error.column) == at(text, 3, "fast-forward")
    assert "pipelines.default.merge.method" in error.message
    assert "'squash', 'merge' or 'rebase'" in error.message


def test_a_misspelt_key_names_the_right_one() -> None:
    text = "merge: {delete_branches: true}\n" + pipeline()
    error = only_error(text)
    assert (error.line, error.column) == at(text, 1, "delete_branches")
    assert error.message == "unknown key `delete_branches` in merge; did you mean `delete_branch`?"


def test_an_unknown_commit_title_placeholder_is_refused() -> None:
    text = pipeline('    merge: {commit_title: "{issue}: {title}"}\n')
    error = only_error(text)
    assert (error.line, error.column) == at(text, 3, '"{issue}')
    assert error.message.startswith(
        "a commit title may use only the placeholders {title}, {pr}, {ticket}"
    )


def test_an_unbalanced_brace_and_an_empty_title_are_refused() -> None:
    unbalanced = pipeline('    merge: {commit_title: "{title (#{pr})"}\n')
    assert "only the placeholders" in only_error(unbalanced).message
    empty = 'merge: {commit_title: "  "}\n' + pipeline()
    error = only_error(empty)
    assert (error.line, error.message) == (1, "an empty commit title; write one or remove it")


def test_a_literal_brace_is_allowed() -> None:
    text = pipeline('    merge: {commit_title: "{{ballet}} {title} (#{pr})"}\n')
    assert resolved_merge(text).commit_title == "{{ballet}} {title} (#{pr})"


def test_a_commit_title_with_rebase_is_refused_where_it_was_written() -> None:
    own = pipeline('    merge: {method: rebase, commit_title: "{title}"}\n')
    error = only_error(own)
    assert (error.line, error.column) == at(own, 3, '"{title}"')
    assert "a rebase replays the branch's commits" in error.message
    # The title comes from the default, the rebase from the pipeline: point at the method.
    mixed = 'merge: {commit_title: "{title}"}\n' + pipeline("    merge: {method: rebase}\n")
    error = only_error(mixed)
    assert (error.line, error.column) == at(mixed, 4, "rebase")


def test_every_error_is_reported_at_once() -> None:
    text = "merge: {method: squish}\n" + pipeline('    merge: {commit_title: "{x}"}\n')
    result = parse_config(text)
    assert isinstance(result, list)
    assert [e.line for e in result] == [1]  # shape errors first; rules run on valid shapes


def test_the_references_example_is_valid_and_overrides_per_pipeline() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    config = valid(example)
    runtime = Runtime(adapter="command", command=("true",))
    default = resolve_pipeline(config, (), default_runtime=runtime).merge
    docs = resolve_pipeline(config, ("docs",), default_runtime=runtime).merge
    assert default == MergeStrategy(commit_title="{title} (#{pr})")
    assert docs == MergeStrategy(method="rebase", delete_branch=True, commit_title=None)
