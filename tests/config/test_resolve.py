"""Resolution: labels choose the pipeline; every default is filled in; the hash pins it."""

from __future__ import annotations

import pytest
from ballet.core.config import BalletConfig, Runtime
from ballet.core.resolve import (
    DEPLOYMENT_RUNTIME,
    MAX_CUSTOM_SKILL_BYTES,
    NoPipelineError,
    ResolveError,
    SkillsTooLargeError,
    content_hash,
    default_config,
    resolve_pipeline,
)
from config_helpers import DESIGN_EXAMPLE, valid

CLAUDE = Runtime(adapter="claude-code", model="sonnet", env=("ANTHROPIC_API_KEY",))


@pytest.fixture
def design() -> BalletConfig:
    return valid(DESIGN_EXAMPLE.read_text())


def test_label_of_a_type_chooses_its_pipeline(design: BalletConfig) -> None:
    resolved = resolve_pipeline(design, ["ballet", "Docs"])
    assert (resolved.name, resolved.ticket_type) == ("docs", "docs")


def test_without_a_type_label_the_default_pipeline_runs(design: BalletConfig) -> None:
    resolved = resolve_pipeline(design, ["ballet", "bug"])
    assert (resolved.name, resolved.ticket_type) == ("default", "default")


def test_first_matching_type_wins() -> None:
    text = (
        "types:\n  - {label: docs, pipeline: a}\n  - {label: bug, pipeline: b}\n"
        "pipelines:\n  a: {stages: [{id: x, kind: agent}]}\n  b: {stages: [{id: y, kind: agent}]}\n"
    )
    config = valid(text)
    assert resolve_pipeline(config, ["bug", "docs"], default_runtime=CLAUDE).name == "a"
    assert resolve_pipeline(config, ["bug"], default_runtime=CLAUDE).name == "b"


def test_no_matching_type_and_no_default_is_an_error() -> None:
    text = "types:\n  - {label: docs, pipeline: a}\n"
    config = valid(text + "pipelines:\n  a: {stages: [{id: x, kind: agent}]}\n")
    with pytest.raises(NoPipelineError, match="none of its labels matches `docs`") as raised:
        resolve_pipeline(config, ["bug"], default_runtime=CLAUDE)
    assert isinstance(raised.value, ValueError)
    with pytest.raises(NoPipelineError, match=r"no `types:` defined"):
        resolve_pipeline(valid("pipelines:\n  a: {stages: [{id: x, kind: agent}]}\n"), [])


def test_a_file_without_pipelines_runs_the_built_in_default() -> None:
    # Its own runtime and policy hold; the stages are the built-in template's.
    text = (
        "runtimes:\n  script: {adapter: command, command: [python3, a.py]}\n"
        "default_runtime: script\npolicy: {merge: manual}\n"
    )
    resolved = resolve_pipeline(valid(text), ["ballet"])
    assert (resolved.name, resolved.ticket_type) == ("default", "default")
    assert [s.id for s in resolved.stages] == ["implement", "review", "verify", "integrate"]
    assert resolved.stages[0].runtime == "script"
    assert resolved.policy.merge == "manual"


def test_stages_are_fully_resolved(design: BalletConfig) -> None:
    resolved = resolve_pipeline(design, [])
    implement, review, verify, approval, integrate = resolved.stages
    assert implement.name == "Implement"
    assert (implement.runtime, implement.runtime_config) == ("claude", design.runtimes["claude"])
    assert (review.runtime, review.runtime_config) == ("codex", design.runtimes["codex"])
    assert approval.runtime is None and approval.runtime_config is None
    assert integrate.action == "merge" and integrate.runtime is None
    # `done` made explicit: the following stage, and off the end `$done`.
    assert verify.next == {"pass": "integrate", "fail": "implement", "done": "approval"}
    assert integrate.next == {"merged": "$done", "returned": "implement", "done": "$done"}
    assert implement.next == {"done": "review"}
    assert resolved.stage("verify") is verify
    with pytest.raises(KeyError):
        resolved.stage("nope")


def test_pipeline_settings_are_carried(design: BalletConfig) -> None:
    resolved = resolve_pipeline(design, [])
    assert (resolved.version, resolved.base, resolved.iteration_limit) == (3, "main", 3)
    assert resolved.branch == "ballet/{ticket}-{slug}"
    assert resolved.approvers == ("octocat",) and resolved.signoffs == ("security",)
    assert resolved.roles["security"].runtime == "codex"
    assert resolved.roles["security"].runtime_config == design.runtimes["codex"]
    assert resolved_docs_base_is_none(design)


def resolved_docs_base_is_none(design: BalletConfig) -> bool:
    return resolve_pipeline(design, ["docs"]).base is None


def test_stage_name_defaults_from_its_id_unless_given() -> None:
    text = "pipelines:\n  default:\n    stages:\n      - {id: run_security-scan, kind: agent}\n"
    text += "      - {id: b, kind: agent, name: Second look}\n"
    resolved = resolve_pipeline(valid(text), [], default_runtime=CLAUDE)
    assert [s.name for s in resolved.stages] == ["Run security scan", "Second look"]


def test_deployment_runtime_fills_in_when_the_file_names_none() -> None:
    text = "roles:\n  sec: {}\npipelines:\n  default: {stages: [{id: a, kind: agent}]}\n"
    resolved = resolve_pipeline(valid(text), [], default_runtime=CLAUDE)
    assert resolved.stages[0].runtime == DEPLOYMENT_RUNTIME
    assert resolved.stages[0].runtime_config == CLAUDE
    assert resolved.roles["sec"].runtime_config == CLAUDE


def test_file_default_runtime_wins_over_the_deployments(design: BalletConfig) -> None:
    resolved = resolve_pipeline(design, ["docs"], default_runtime=Runtime(adapter="aider"))
    assert resolved.stages[0].runtime == "claude"


def test_agent_stage_without_any_runtime_is_an_error() -> None:
    config = valid("pipelines:\n  default: {stages: [{id: a, kind: agent}]}\n")
    with pytest.raises(ResolveError, match="stage `a` has no runtime: set `default_runtime:`"):
        resolve_pipeline(config, [])


def test_unchecked_config_with_unknown_runtime_is_an_error() -> None:
    config = BalletConfig.model_validate(
        {"pipelines": {"default": {"stages": [{"id": "a", "kind": "agent", "runtime": "x"}]}}}
    )
    with pytest.raises(ResolveError, match="unknown runtime `x`; run `ballet validate`"):
        resolve_pipeline(config, [])


def test_default_template_resolves_with_the_deployment_runtime() -> None:
    resolved = resolve_pipeline(default_config(CLAUDE), ["ballet"])
    assert [s.id for s in resolved.stages] == ["implement", "review", "verify", "integrate"]
    assert all(s.runtime_config == CLAUDE for s in resolved.stages if s.kind == "agent")
    assert [s.skills for s in resolved.stages[:3]] == [
        ("implementer",),
        ("reviewer",),
        ("verifier",),
    ]
    assert resolved.custom_skills == {}


CUSTOM = (
    "roles:\n  sec: {skills: [audit]}\n"
    "pipelines:\n  default: {stages: [{id: a, kind: agent, skills: [implementer, style]}]}\n"
)


def test_used_custom_skills_are_pinned() -> None:
    config = valid(CUSTOM, skills={"audit", "style", "unused"})
    texts = {"audit": "# Audit", "style": "# Style", "unused": "# Unused"}
    resolved = resolve_pipeline(config, [], custom_skills=texts, default_runtime=CLAUDE)
    assert resolved.custom_skills == {"audit": "# Audit", "style": "# Style"}


def test_missing_custom_skill_text_is_an_error() -> None:
    config = valid(CUSTOM, skills={"audit", "style"})
    with pytest.raises(
        ResolveError, match=r"skill `audit` is not defined; add .ballet/skills/audit.md"
    ):
        resolve_pipeline(config, [], custom_skills={"style": "x"}, default_runtime=CLAUDE)


def test_custom_skills_over_the_cap_are_refused() -> None:
    config = valid(CUSTOM, skills={"audit", "style"})
    half = "x" * (MAX_CUSTOM_SKILL_BYTES // 2)
    resolve_pipeline(
        config, [], custom_skills={"audit": half, "style": half}, default_runtime=CLAUDE
    )
    with pytest.raises(SkillsTooLargeError, match="over the 16 KB limit"):
        resolve_pipeline(
            config, [], custom_skills={"audit": half, "style": half + "é"}, default_runtime=CLAUDE
        )


def test_hash_is_the_content_hash_and_stable(design: BalletConfig) -> None:
    first = resolve_pipeline(design, [])
    assert len(first.hash) == 64 and first.hash == content_hash(first)
    again = resolve_pipeline(valid(DESIGN_EXAMPLE.read_text()), ["ballet"])
    assert again.hash == first.hash


def test_key_order_and_formatting_do_not_change_the_hash() -> None:
    one = "runtimes:\n  c: {adapter: codex, model: m}\n  d: {adapter: aider}\ndefault_runtime: c\n"
    one += "pipelines:\n  default: {stages: [{id: a, kind: agent, next: {done: $done, fail: a}}]}\n"
    two = "pipelines:\n  default:\n    stages:\n      - kind: agent\n"
    two += "        next: {fail: a, done: $done}\n"
    two += "        id: a  # same stage\ndefault_runtime: c\nruntimes:\n  d: {adapter: aider}\n"
    two += "  c: {model: m, adapter: codex}\n"
    assert resolve_pipeline(valid(one), []).hash == resolve_pipeline(valid(two), []).hash


@pytest.mark.parametrize(
    "change",
    [
        ("timeout_minutes: 60", "timeout_minutes: 61"),
        ("skills: [verifier]", "skills: [verifier, reviewer]"),
        ("model: sonnet", "model: opus"),
        ("merge: auto", "merge: manual"),
        ("approvers: [octocat]", "approvers: [octocat, hubot]"),
        ("iteration_limit: 3", "iteration_limit: 4"),
        ("injection, authz.", "injection."),
    ],
)
def test_any_change_changes_the_hash(design: BalletConfig, change: tuple[str, str]) -> None:
    text = DESIGN_EXAMPLE.read_text()
    assert change[0] in text
    changed = valid(text.replace(change[0], change[1], 1))
    assert resolve_pipeline(changed, []).hash != resolve_pipeline(design, []).hash


def test_custom_skill_text_changes_the_hash() -> None:
    config = valid(CUSTOM, skills={"audit", "style"})
    one = resolve_pipeline(
        config, [], custom_skills={"audit": "a", "style": "s"}, default_runtime=CLAUDE
    )
    two = resolve_pipeline(
        config, [], custom_skills={"audit": "a", "style": "S"}, default_runtime=CLAUDE
    )
    assert one.hash != two.hash


def test_resolved_pipeline_round_trips_through_json(design: BalletConfig) -> None:
    from ballet.core.config import ResolvedPipeline

    resolved = resolve_pipeline(design, [])
    back = ResolvedPipeline.model_validate_json(resolved.model_dump_json())
    assert back == resolved and content_hash(back) == resolved.hash
