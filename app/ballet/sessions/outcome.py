"""Reading what a session left behind (report, handoff) and writing `failed` reports.

A gate fails closed: a report that is missing, too big, not JSON or not the
contract's shape never counts as the outcome the agent may have meant.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ballet.core.report import Handoff, Report, Usage
from ballet.sessions.process import ProcessOutcome
from ballet.sessions.spec import FailureReason, RunnerSpec, SessionResult

MAX_REPORT_BYTES = 1024 * 1024
# What a failed report passes on of the output: its last error lines, each cut. Stages
# exchange artifacts, never transcripts: the whole output stays in the session's log.
ERROR_LINES = 3
ERROR_LINE_CHARS = 300
ERROR_WORDS = re.compile(
    r"error|exception|traceback|fatal|panic|denied|refused|not found|failed|invalid|cannot|"
    r"can't|unable|could not|missing|unauthori[sz]ed|forbidden|timed out|killed",
    re.IGNORECASE,
)
HEADLINES: dict[FailureReason, str] = {
    "workspace": "the workspace could not be prepared",
    "runtime": "the runtime could not be started",
    "timeout": "the session timed out",
    "exit_code": "the session exited with an error and wrote no report",
    "missing_report": "the session wrote no report",
    "invalid_report": "the session's report is invalid",
    "invalid_handoff": "the session's handoff is invalid",
    "push": "the ticket branch could not be pushed",
    "secret": "the session's commits carry a secret, so nothing was pushed",
    "memory": "the session went over its memory limit",
    "processes": "the session went over its process limit",
    "disk": "the session filled its disk",
    "cpu": "the session ran out of time at its CPU limit",
}
Model = TypeVar("Model", bound=BaseModel)


class SessionFailure(Exception):
    def __init__(self, reason: FailureReason, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(message)


def read_report(path: Path) -> Report:
    return _read(path, Report, "missing_report", "invalid_report", "report")


def read_handoff(path: Path) -> Handoff | None:
    """The handoff, or None when the session wrote none."""
    if not path.exists():
        return None
    return _read(path, Handoff, "invalid_handoff", "invalid_handoff", "handoff")


def _read(
    path: Path, model: type[Model], missing: FailureReason, invalid: FailureReason, what: str
) -> Model:
    data = _read_bounded(path, missing, invalid, what)
    try:
        return model.model_validate_json(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(document)'}: {e['msg']}" for e in error.errors()
        )
        raise SessionFailure(
            invalid, f"the {what} does not match the contract: {problems}"
        ) from None


def _read_bounded(path: Path, missing: FailureReason, invalid: FailureReason, what: str) -> bytes:
    """At most MAX_REPORT_BYTES of a regular file the session wrote: never a symlink
    out of its workspace, a FIFO that blocks, or /dev/zero, however big it claims to be."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise SessionFailure(missing, f"no {what} at {path}") from None
    except OSError as exc:
        raise SessionFailure(
            invalid, f"the {what} cannot be read ({exc.strerror}); write a plain file"
        ) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SessionFailure(invalid, f"the {what} is not a plain file; write a plain file")
        data = file.read(MAX_REPORT_BYTES + 1)
    if len(data) > MAX_REPORT_BYTES or info.st_size > MAX_REPORT_BYTES:
        size = max(info.st_size, len(data))
        raise SessionFailure(
            invalid, f"the {what} is {size} bytes; the limit is {MAX_REPORT_BYTES} bytes"
        )
    return data


def failed_report(
    reason: FailureReason,
    message: str,
    output_tail: str | None,
    usage: Usage | None = None,
    exit_code: int | None = None,
) -> Report:
    """What failed: the reason, the exit and the output's last error lines, never the
    output itself (the next session gets this report). `output_tail` None: no process ran."""
    summary = f"**Session failed: {HEADLINES[reason]}.** {message}"
    if exit_code is not None and f"code {exit_code}" not in message:
        summary += f" It exited with code {exit_code}."
    errors = last_error_lines(output_tail or "")
    if errors:
        fence = "`" * max(3, _longest_backtick_run(errors) + 1)
        summary += f"\n\nIts last error lines:\n\n{fence}\n{errors}\n{fence}"
    if output_tail is not None:
        summary += "\n\nIts whole output is in the session's log."
    return Report(outcome="failed", summary=summary, usage=usage or Usage())


def last_error_lines(output: str) -> str:
    """The last ERROR_LINES lines of `output` that say an error, each cut to
    ERROR_LINE_CHARS: what went wrong, without what the session otherwise printed."""
    found = [line.strip() for line in output.splitlines() if ERROR_WORDS.search(line)]
    cut = [
        line if len(line) <= ERROR_LINE_CHARS else line[:ERROR_LINE_CHARS] + " […]"
        for line in found[-ERROR_LINES:]
    ]
    return "\n".join(cut)


def with_usage(report: Report, metered: Usage | None) -> Report:
    """What the CLI metered replaces whatever usage the report claims (an agent may
    copy an example, or guess); a report's own usage counts only where nothing was
    metered, i.e. for a `command` runtime, whose program knows what it spent."""
    if metered is None:
        return report
    return report.model_copy(update={"usage": metered})


def handoff_from_report(report: Report) -> Handoff:
    """A phase that wrote no handoff passes on its report's summary and lists."""
    return Handoff(
        summary=report.summary,
        decisions=report.decisions,
        constraints=report.constraints,
        open_questions=report.open_questions,
    )


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def read_results(
    spec: RunnerSpec, outcome: ProcessOutcome, report_path: Path, handoff_path: Path
) -> tuple[Report, Handoff | None]:
    """The report (and handoff) of a session whose process has ended, or why there is none."""
    if outcome.timed_out:
        raise SessionFailure(
            "timeout",
            f"it ran past its {spec.timeout_seconds:g} s timeout and its whole process "
            "group was killed; its commits were not pushed",
        )
    try:
        report = read_report(report_path)
    except SessionFailure as failure:
        if failure.reason == "missing_report" and outcome.exit_code != 0:
            raise SessionFailure("exit_code", f"it exited with code {outcome.exit_code}") from None
        raise
    if spec.phase is None:
        return report, None
    return report, read_handoff(handoff_path) or handoff_from_report(report)


def failed_result(
    failure: SessionFailure,
    usage: Usage | None,
    tail: str | None,
    head_sha: str | None,
    started: float,
    exit_code: int | None = None,
) -> SessionResult:
    """A `failed` result: `tail` is the end of the output (None: no process ran)."""
    report = failed_report(failure.reason, failure.message, tail, usage, exit_code)
    return SessionResult(
        report=report,
        head_sha=head_sha,
        usage=report.usage,
        duration_seconds=time.monotonic() - started,
        handoff=None,
        output_tail=tail or "",
        failure_reason=failure.reason,
    )
