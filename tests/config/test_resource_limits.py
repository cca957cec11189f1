"""`limits:` on runtimes and agent stages: validated at line:col, resolved into the
runtime each stage runs (the stage's lowering its runtime's), pinned with the pipeline."""

from __future__ import annotations

from ballet.core.config import BalletConfig
from ballet.core.resolve import resolve_pipeline
from ballet.core.session_limits import Limits
from ballet.core.validate import parse_config

FILE = """\
runtimes:
  claude:
    adapter: command
    command: [agent]
    limits: {memory: 2GiB, processes: 100, cpus: 1.5}
default_runtime: claude
roles:
  security: {runtime: claude}
pipelines:
  default:
    stages:
      - {id: implement, kind: agent, limits: {memory: 1GB, disk: 3GiB, cpus: 4}}
      - {id: review, kind: agent}
"""


def test_limits_resolve_into_the_runtime_each_stage_runs() -> None:
    config = parse_config(FILE)
    assert isinstance(config, BalletConfig)
    pipeline = resolve_pipeline(config, [])
    implement, review = pipeline.stages
    assert implement.runtime_config is not None and review.runtime_config is not None
    assert implement.runtime_config.limits == Limits(
        memory="1GB", disk="3GiB", processes=100, cpus=1.5
    )
    assert review.runtime_config.limits == Limits(memory="2GiB", processes=100, cpus=1.5)
    assert pipeline.roles["security"].runtime_config.limits == review.runtime_config.limits


def refusals(text: str) -> list[str]:
    errors = parse_config(text)
    assert isinstance(errors, list), "the file was accepted"
    return [str(e) for e in errors]


def test_sizes_without_a_unit_or_with_an_unknown_one_are_refused_where_they_are() -> None:
    text = FILE.replace("memory: 1GB, disk: 3GiB", "memory: 1024, disk: 3 parsecs")
    assert refusals(text) == [
        ".ballet.yml:12:55: pipelines.default.stages[0].limits.memory: Value error, "
        "'1024' has no unit; write e.g. 1024MiB or 1024GiB (or 1024B for bytes)",
        ".ballet.yml:12:67: pipelines.default.stages[0].limits.disk: Value error, "
        "'3 parsecs': unknown unit 'parsecs'; use B, KiB, MiB, GiB, TiB (powers of 1024) "
        "or kB, MB, GB, TB (powers of 1000)",
    ]


def test_too_little_to_start_a_session_and_unknown_keys_are_refused() -> None:
    text = FILE.replace("memory: 2GiB, processes: 100, cpus: 1.5", "memroy: 2GiB, processes: 2")
    text = text.replace("cpus: 4}", "cpus: 0}")
    assert refusals(text) == [
        ".ballet.yml:5:14: unknown key `memroy` in runtimes.claude.limits; did you mean `memory`?",
        ".ballet.yml:5:39: runtimes.claude.limits.processes: Input should be greater than "
        "or equal to 8; write a number of at least 8",
        ".ballet.yml:12:78: pipelines.default.stages[0].limits.cpus: Input should be greater "
        "than or equal to 0.01; write a number of at least 0.01",
    ]
    too_small = refusals(FILE.replace("memory: 2GiB", "memory: 1MiB"))
    assert too_small == [
        ".ballet.yml:5:22: runtimes.claude.limits.memory: Value error, '1MiB' is too small; "
        "write at least 16 MiB"
    ]


def test_a_stage_that_runs_no_agent_takes_no_limits() -> None:
    text = FILE + "      - {id: ci, kind: platform, wait_for: checks, limits: {memory: 1GiB}}\n"
    assert refusals(text) == [
        ".ballet.yml:14:52: a platform stage runs no agent, so it takes no `limits`; remove it"
    ]
