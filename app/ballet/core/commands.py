"""Slash-command parsing: `/ballet <verb> [args]` lines in a comment.

Only lines that start with `/ballet` count (leading spaces allowed); quoted
lines (`> …`) and fenced code blocks are ignored, so quoting someone else's
command never re-runs it. A bad line never raises: it becomes a
`CommandError` that says what was wrong and what to write instead.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ballet.core.config import MergePolicy, ReviewPolicy
from ballet.core.limits import COMMANDS_PER_COMMENT

Verb = Literal[
    "approve",
    "reject",
    "answer",
    "retry",
    "cancel",
    "pause",
    "resume",
    "signoff_require",
    "signoff_waive",
    "policy",
    "refresh",
    "budget",
    "status",
    "help",
]

HELP_TEXT = """\
Ballet commands (at the start of a line; several per comment are fine):
- `/ballet approve [sha|note]` — approve the waiting human stage or landing (approvers only)
- `/ballet reject <reason>` — send the work back with a reason (approvers only)
- `/ballet answer <text>` — answer the open question; the stage re-runs with it
- `/ballet retry` — run the current stage again in a new session
- `/ballet cancel` — stop the ticket
- `/ballet pause` / `/ballet resume` — hold the ticket / carry on
- `/ballet signoff require <role>` / `/ballet signoff waive <role>` — change required sign-offs
- `/ballet policy review=agent|agent+human merge=approved|auto|manual` — change the policy
- `/ballet refresh` — adopt the issue's current title and body as the ticket's text
- `/ballet budget +<dollars>` — raise this ticket's cost cap, e.g. `/ballet budget +5`
- `/ballet status` — show where the ticket is
- `/ballet help` — this text"""

_SHA = re.compile(r"^[0-9a-f]{7,40}$")
_ROLE = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINE = re.compile(r"^\s{0,3}/ballet(?:\s+(?P<verb>\S+))?(?:\s+(?P<rest>.*?))?\s*$")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Command(Frozen):
    verb: Verb
    text: str = ""  # approve's note, reject's reason, answer's text
    sha: str | None = None  # approve's SHA
    role: str | None = None  # signoff's role
    review: ReviewPolicy | None = None
    merge: MergePolicy | None = None
    usd: float | None = None  # budget's dollars added to the ticket's cost cap


class CommandError(Frozen):
    line: str
    message: str


ParsedCommand = Command | CommandError


def parse_commands(body: str) -> tuple[ParsedCommand, ...]:
    """The `/ballet` lines of a comment body, in order: at most
    `COMMANDS_PER_COMMENT`, then one `CommandError` saying how many more were refused."""
    found: list[ParsedCommand] = []
    fence: str | None = None
    for line in body.splitlines():
        opener = _FENCE.match(line)
        if opener:
            if fence is None:
                fence = opener[1]
            elif opener[1] == fence:
                fence = None
            continue
        if fence is not None or line.lstrip().startswith(">"):
            continue
        match = _LINE.match(line)
        if match:
            found.append(parse_line(line.strip(), match["verb"] or "", match["rest"] or ""))
    if len(found) <= COMMANDS_PER_COMMENT:
        return tuple(found)
    extra = len(found) - COMMANDS_PER_COMMENT
    refused = CommandError(
        line=f"({extra} more `/ballet` lines)",
        message=(
            f"Only the first {COMMANDS_PER_COMMENT} commands of a comment are taken; "
            f"{extra} more were ignored. Put the others in a new comment."
        ),
    )
    return (*found[:COMMANDS_PER_COMMENT], refused)


def parse_line(line: str, verb: str, rest: str) -> ParsedCommand:
    simple: dict[str, Verb] = {
        "retry": "retry",
        "cancel": "cancel",
        "pause": "pause",
        "resume": "resume",
        "refresh": "refresh",
        "status": "status",
        "help": "help",
    }
    if verb in simple:
        return Command(verb=simple[verb])
    if verb == "approve":
        word = rest.split(maxsplit=1)[0] if rest else ""
        if _SHA.match(word):
            return Command(verb="approve", sha=word, text=rest[len(word) :].strip())
        return Command(verb="approve", text=rest)
    if verb in ("reject", "answer"):
        if not rest:
            what = "a reason" if verb == "reject" else "your answer"
            return CommandError(
                line=line, message=f"`/ballet {verb}` needs {what}: write `/ballet {verb} <text>`."
            )
        return Command(verb="reject" if verb == "reject" else "answer", text=rest)
    if verb == "signoff":
        return _signoff(line, rest.split())
    if verb == "policy":
        return _policy(line, rest.split())
    if verb == "budget":
        return _budget(line, rest)
    if not verb:
        return CommandError(line=line, message="`/ballet` needs a verb, e.g. `/ballet status`.")
    return CommandError(line=line, message=f"unknown command `{verb}`.")


def _signoff(line: str, words: list[str]) -> ParsedCommand:
    usage = "write `/ballet signoff require <role>` or `/ballet signoff waive <role>`."
    if len(words) != 2 or words[0] not in ("require", "waive"):
        return CommandError(line=line, message=f"bad sign-off command: {usage}")
    if not _ROLE.match(words[1]):
        return CommandError(line=line, message=f"`{words[1]}` is not a role name: {usage}")
    verb: Verb = "signoff_require" if words[0] == "require" else "signoff_waive"
    return Command(verb=verb, role=words[1])


def _policy(line: str, words: list[str]) -> ParsedCommand:
    usage = "write `/ballet policy review=agent|agent+human merge=approved|auto|manual`."
    review: ReviewPolicy | None = None
    merge: MergePolicy | None = None
    merges: dict[str, MergePolicy] = {"approved": "approved", "auto": "auto", "manual": "manual"}
    for word in words:
        key, _, value = word.partition("=")
        if key == "review" and value in ("agent", "agent+human"):
            review = "agent" if value == "agent" else "agent+human"
        elif key == "merge" and value in merges:
            merge = merges[value]
        else:
            return CommandError(line=line, message=f"`{word}` is not a policy setting: {usage}")
    if review is None and merge is None:
        return CommandError(line=line, message=f"`/ballet policy` needs a setting: {usage}")
    return Command(verb="policy", review=review, merge=merge)


_DOLLARS = re.compile(r"^\+\s*\$?(?P<n>\d{1,6}(?:\.\d{1,2})?)$")
MAX_BUDGET_RAISE_USD = 10_000


def _budget(line: str, rest: str) -> ParsedCommand:
    usage = "write `/ballet budget +5` to raise this ticket's cost cap by $5."
    if not rest:
        return CommandError(line=line, message=f"`/ballet budget` needs an amount: {usage}")
    match = _DOLLARS.match(rest)
    if match is None:
        if rest.startswith("-"):
            why = "a cap can only be raised"
        elif re.match(r"^\$?\d", rest):
            why = "the `+` says the amount is added to the cap, not the cap itself"
        else:
            why = f"`{rest}` is not an amount in dollars"
        return CommandError(line=line, message=f"{why}: {usage}")
    usd = float(match["n"])
    if usd <= 0 or usd > MAX_BUDGET_RAISE_USD:
        return CommandError(
            line=line,
            message=f"raise the cap by more than $0 and at most ${MAX_BUDGET_RAISE_USD:,} "
            f"at a time: {usage}",
        )
    return Command(verb="budget", usd=usd)
