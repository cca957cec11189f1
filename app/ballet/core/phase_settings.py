"""`phases:` in `.ballet.yml`: how stages with phases run (docs/configuration.md).

Its own module, as `session_limits` is: `core.config` imports it.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict


def _in_the_clone(path: str) -> str:
    parts = path.split("/")
    if not re.fullmatch(r"[A-Za-z0-9._/-]+", path) or any(
        p in ("", ".", "..", ".git") for p in parts
    ):
        raise ValueError(
            "write a relative directory inside the clone, e.g. `.ballet/handoffs`: letters, "
            "digits, `.`, `_`, `-` and `/`, no leading `/`, no empty, `.`, `..` or `.git` parts"
        )
    return path


ClonePath = Annotated[str, AfterValidator(_in_the_clone)]


class PhaseSettings(BaseModel):
    """How stages with `phases:` run, for every pipeline."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    enabled: bool = True
    """`false`: stages' `phases:` are ignored and each agent stage runs as one session."""
    artefact_path: ClonePath | None = None
    """A directory in the clone, e.g. `.ballet/handoffs`, where Ballet also writes each
    phase's handoff as `<stage>-<phase>.json` and commits it with the phase's work, so the
    next phases and people find it on the branch; default: the handoff is only passed on."""
    gc_on_close: bool = True
    """With `artefact_path`: the handoff files are removed from the branch (in a commit)
    when the stage's last phase ends, so they never reach the merge; they stay in the
    branch's history. `false`: they stay on the branch and merge with the work."""
