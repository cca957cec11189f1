"""The Dockerfile, read by a Dockerfile parser: stages, pins, users, what the worker carries.

No Docker engine runs here, so the images are not built by the tests: this
checks what can be checked without one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

REPO_ROOT = Path(__file__).resolve().parents[2]
PINNED_IMAGE = re.compile(r"^[a-z0-9./-]+:\d+\.\d+\.\d+[A-Za-z0-9._-]*(@sha256:[0-9a-f]{64})?$")
NPM_CLIS = ("@anthropic-ai/claude-code", "@openai/codex", "@google/gemini-cli", "opencode-ai")

Stage = list[tuple[str, str]]


@pytest.fixture(scope="module")
def parser() -> DockerfileParser:
    return DockerfileParser(path=str(REPO_ROOT / "Dockerfile"))


@pytest.fixture(scope="module")
def stages(parser: DockerfileParser) -> dict[str, Stage]:
    """Each named stage's instructions (after the FROM), in order."""
    found: dict[str, Stage] = {}
    current: Stage | None = None
    for item in parser.structure:
        instruction, value = item["instruction"], item["value"]
        if instruction == "FROM":
            words = value.split()
            assert len(words) == 3 and words[1].upper() == "AS", f"unnamed stage: FROM {value}"
            current = found.setdefault(words[2], [("FROM", words[0])])
        elif current is not None and instruction != "COMMENT":
            current.append((instruction, value))
    return found


def lineage(stages: dict[str, Stage], name: str) -> Stage:
    """A stage's instructions with those of the stages it builds on first."""
    parent = stages[name][0][1]
    return (lineage(stages, parent) if parent in stages else []) + stages[name]


def run_text(stage: Stage) -> str:
    return "\n".join(value for instruction, value in stage if instruction == "RUN")


def test_web_and_worker_are_targets_of_a_multi_stage_build(stages: dict[str, Stage]) -> None:
    assert {"web", "worker"} <= stages.keys()
    assert len(stages) >= 4


def test_every_base_image_is_pinned(parser: DockerfileParser, stages: dict[str, Stage]) -> None:
    external = [image for image in parser.parent_images if image not in stages]
    assert external, "the Dockerfile names no base image"
    for image in external:
        assert PINNED_IMAGE.match(image), f"{image} is not pinned to a full version"
        assert ":latest" not in image


@pytest.mark.parametrize("target", ["web", "worker"])
def test_targets_run_as_an_unprivileged_user(stages: dict[str, Stage], target: str) -> None:
    users = [value for instruction, value in lineage(stages, target) if instruction == "USER"]
    assert users, f"{target} sets no USER: it would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0") and (not user.isdigit() or int(user) >= 1000)
    assert any(instruction == "ENTRYPOINT" for instruction, _ in lineage(stages, target))


def test_the_worker_carries_git_bubblewrap_node_and_pinned_agent_clis(
    stages: dict[str, Stage],
) -> None:
    worker = lineage(stages, "worker")
    installed = run_text(worker)
    assert re.search(r"apt-get install[^\n]*\bgit\b", installed)
    assert re.search(r"apt-get install[^\n]*\bbubblewrap\b", installed)
    copies = [value for instruction, value in worker if instruction == "COPY"]
    assert any(c.startswith("--from=agent-clis") and "/usr/local/bin/node" in c for c in copies)
    assert any(c.startswith("--from=agent-clis /opt/agents") for c in copies)
    assert any(c.startswith("--from=aider /opt/aider") for c in copies)
    clis = run_text(stages["agent-clis"])
    for package in NPM_CLIS:
        assert re.search(rf"{re.escape(package)}@\d+\.\d+\.\d+\b", clis), f"{package} unpinned"
    assert re.search(r"aider-chat==\d+\.\d+\.\d+\b", run_text(stages["aider"]))


def test_the_web_image_carries_no_agent_runtime(stages: dict[str, Stage]) -> None:
    web = lineage(stages, "web")
    assert not any(
        instruction == "COPY" and ("agent-clis" in value or "aider" in value)
        for instruction, value in web
    )
    assert "bubblewrap" not in run_text(web)
    assert any(instruction == "CMD" and '"web"' in value for instruction, value in web)
