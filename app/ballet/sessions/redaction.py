"""What a session may show, and everything it returns redacted before it leaves.

A session's secrets (docs/security.md, "What is redacted") are the values of the
variables its runtime declares, as the worker hands them over, and Ballet's git
token. The worker's own credentials (`GITHUB_TOKEN`, the webhook secret, the
App's key, any `*_KEY`, `*TOKEN`, `*SECRET*`, `*PASSWORD` of its environment, a
`*_URL` with a password in it)
never reach a session; they are redacted all the same, in case a message of
Ballet's own carries one.

`redacted_result` is the last thing `run_session` does: the report (summary,
details, decisions, questions, every string of it), the handoff and the output
tail all go through the session's `Redactor`, so nothing downstream (Redis, the
report comment, check runs) ever holds a value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from ballet.core.report import Report
from ballet.sessionlog.redact import Redactor
from ballet.sessions.environment import INHERITED
from ballet.sessions.spec import SessionResult

# The git token's name in a marker: `[redacted:BALLET_GIT_TOKEN]`.
GIT_TOKEN = "BALLET_GIT_TOKEN"
# What names a credential in the worker's environment (not `*_PATH`, `*_URL`, `*_DIR`).
WORKER_SECRET = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|_KEY|CREDENTIALS?)$|SECRET", re.I)
OUTCOME_CHARS = 64
Model = TypeVar("Model", bound=BaseModel)


def session_redactor(
    parent_env: Mapping[str, str], declared: Sequence[str], git_token: str | None
) -> Redactor:
    """The session's redactor: its declared variables' values first (their names are
    what a marker says), then the worker's own credentials, then the git token."""
    secrets = [(name, parent_env[name]) for name in declared if name in parent_env]
    secrets += [
        (name, value)
        for name, value in parent_env.items()
        if name not in declared and name not in INHERITED and _credential(name, value)
    ]
    shared = _redactor(tuple(secrets))
    return shared.adding({GIT_TOKEN: git_token}) if git_token else shared


@functools.lru_cache(maxsize=16)
def _redactor(secrets: tuple[tuple[str, str], ...]) -> Redactor:
    """One per set of values: a worker's sessions of one runtime share theirs (the
    worker's own credentials, the runtime's keys); each adds only its git token."""
    return Redactor(secrets)


def _credential(name: str, value: str) -> bool:
    """A worker variable that holds a credential: by its name, or a URL with a password."""
    return bool(WORKER_SECRET.search(name)) or (name.endswith("_URL") and "@" in value)


def redacted_result(result: SessionResult, redactor: Redactor) -> SessionResult:
    report = redacted_report(result.report, redactor)
    handoff = redacted(result.handoff, redactor) if result.handoff is not None else None
    return result.model_copy(
        update={
            "report": report,
            "usage": report.usage,
            "handoff": handoff,
            "output_tail": redactor.redact(result.output_tail),
        }
    )


def redacted_report(report: Report, redactor: Redactor) -> Report:
    data = _strings(report.model_dump(), redactor)
    data["outcome"] = data["outcome"][:OUTCOME_CHARS]  # a marker may be the longer
    return Report.model_validate(data)


def redacted(model: Model, redactor: Redactor) -> Model:
    """`model` with every string in it redacted (its numbers and flags as they are)."""
    return type(model).model_validate(_strings(model.model_dump(), redactor))


def _strings(value: Any, redactor: Redactor) -> Any:
    if isinstance(value, str):
        return redactor.redact(value)
    if isinstance(value, dict):
        return {key: _strings(item, redactor) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_strings(item, redactor) for item in value]
    return value
