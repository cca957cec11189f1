"""The seeds' templates write a pipeline's ends without `$` (`next: {merged: done,
returned: implement}`): such a file validates and runs as written, `done` being the
ticket's end unless a stage of the pipeline has that id."""

from __future__ import annotations

from ballet.core.config import Runtime
from ballet.core.resolve import resolve_pipeline
from config_helpers import only_error, valid

SCRIPT = Runtime(adapter="command", command=("python3", ".ballet/agent.py"))

SEED = """\
pipelines:
  default:
    stages:
      - {id: implement, kind: agent, skills: [implementer], next: {done: integrate}}
      - {id: integrate, kind: agent, skills: [integrator],
         next: {merged: done, returned: implement, conflict: question, gave_up: failed}}
"""


def test_the_seeds_integrate_as_written_ends_the_ticket() -> None:
    resolved = resolve_pipeline(valid(SEED), ["ballet"], default_runtime=SCRIPT)
    assert resolved.stage("integrate").next == {
        "merged": "$done",
        "returned": "implement",
        "conflict": "$question",
        "gave_up": "$failed",
        "done": "$done",  # the implicit `done` after the last stage
    }


def test_a_stage_named_done_is_the_target_of_done() -> None:
    text = SEED.replace("{id: integrate,", "{id: done, kind: agent}\n      - {id: integrate,")
    text = text.replace("next: {done: integrate}", "next: {done: integrate, skip: done}")
    resolved = resolve_pipeline(valid(text), ["ballet"], default_runtime=SCRIPT)
    assert resolved.stage("implement").next["skip"] == "done"
    assert resolved.stage("integrate").next["merged"] == "done"


def test_a_misspelt_end_is_still_refused_with_the_choices() -> None:
    error = only_error(SEED.replace("merged: done", "merged: finished"))
    assert "unknown target `finished`; write one of `$done`, `$failed`" in error.message
