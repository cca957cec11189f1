"""A session's output as readable steps (placeholder: the renderers follow)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

StepKind = Literal["turn", "tool", "edit", "report", "output", "note"]


class Step(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: StepKind
    title: str
    body: str = ""
    exit_code: int | None = None  # a tool call's, when the CLI said
    stream: Literal["stdout", "stderr", "ballet"] = "stdout"
    seq: int = 0  # the log line it starts at
