"""What must validate: DESIGN's example exactly as written, and the built-in default."""

from __future__ import annotations

import yaml
from ballet.core.config import BUILTIN_SKILL_NAMES, Runtime
from ballet.core.config_rules import check_config
from ballet.core.resolve import default_config
from config_helpers import DESIGN_EXAMPLE, valid


def test_design_example_validates_as_written() -> None:
    config = valid(DESIGN_EXAMPLE.read_text())
    assert list(config.pipelines) == ["default", "docs"]
    default = config.pipelines["default"]
    assert [s.id for s in default.stages] == [
        "implement",
        "review",
        "verify",
        "approval",
        "integrate",
    ]
    assert default.version == 3 and default.base == "main" and default.signoffs == ("security",)
    assert default.budget.sessions == 12 and default.budget.cost_usd == 25
    assert default.stages[0].phases == ("research", "plan", "implement", "verify")
    assert default.stages[3].optional and default.stages[3].kind == "human"
    assert config.runtimes["script"].command == ("python3", ".ballet/agent.py")
    assert config.roles["security"].runtime == "codex"
    assert config.types[0].label == "docs"


def test_default_template_passes_every_rule() -> None:
    config = default_config(Runtime(adapter="claude-code", model="sonnet"))
    assert check_config(config, BUILTIN_SKILL_NAMES) == []
    assert [s.id for s in config.pipelines["default"].stages] == [
        "implement",
        "review",
        "verify",
        "integrate",
    ]


def test_default_template_written_as_yaml_validates_to_itself() -> None:
    config = default_config(Runtime(adapter="codex"))
    text = yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True))
    assert valid(text) == config


def test_unused_top_level_keys_have_defaults() -> None:
    config = valid("trigger_label: go\n")
    assert config.pipelines == {} and config.policy.merge == "approved"
