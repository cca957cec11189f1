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
    "status",
    "help",
]

HELP_TEXT = """\
Ballet commands (at the start of a line; several per comment are fine):
- `/ballet approve [sha|note]` — approve the waiting human stage (approvers only)
- `/ballet reject <reason>` — send the work back with a reason (approvers only)
- `/ballet answer <text>` — answer the open question; the stage re-runs with it
- `/ballet retry` — run the current stage again in a new session
- `/ballet cancel` — stop the ticket
- `/ballet pause` / `/ballet resume` — hold the ticket / carry on
- `/ballet signoff require <role>` / `/ballet signoff waive <role>` — change required sign-offs
- `/ballet policy review=agent|agent+human merge=auto|manual` — change the execution policy
- `/ballet refresh` — adopt the issue's current title and body as the ticket's text
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
    usage = "write `/ballet policy review=agent|agent+human merge=auto|manual`."
    review: ReviewPolicy | None = None
    merge: MergePolicy | None = None
    for word in words:
        key, _, value = word.partition("=")
        if key == "review" and value in ("agent", "agent+human"):
            review = "agent" if value == "agent" else "agent+human"
        elif key == "merge" and value in ("auto", "manual"):
            merge = "auto" if value == "auto" else "manual"
        else:
            return CommandError(line=line, message=f"`{word}` is not a policy setting: {usage}")
    if review is None and merge is None:
        return CommandError(line=line, message=f"`/ballet policy` needs a setting: {usage}")
    return Command(verb="policy", review=review, merge=merge)
