"""A session's output as readable steps: what the model said, ran, edited and reported.

Each agent CLI narrates its run as JSON events on stdout (the format flags are
in sessions/runtimes/): Claude Code's `stream-json`, Codex's `exec --json`,
Gemini CLI's `stream-json` and opencode's `--format json`. `renderer_for`
gives the adapter's `StepRenderer`, which reads those events (sessionlog/clis.py
knows each CLI's) into `Step`s: a model turn (its text), a tool call (its
command, output and exit code), a file edit, the report. A line that is no
event of the adapter's, and all of stderr, is `output`: consecutive lines of one
stream make one step. An event the renderer does not know is shown raw, as a
`note`; nothing a session prints can make rendering fail.

Aider prints no events; its chat history (a markdown transcript, kept in the
session's directory) is rendered instead (`render_aider_history`).

Steps are bounded: at most `MAX_STEPS`, each body at most `MAX_BODY` characters;
past that a last note says how many were left out (the log has everything).
The text a renderer is fed is already redacted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

StepKind = Literal["turn", "tool", "edit", "report", "output", "note"]
StepStream = Literal["stdout", "stderr", "ballet"]
MAX_STEPS = 1000
MAX_BODY = 4096
MAX_TITLE = 160


class Step(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: StepKind
    title: str
    body: str = ""
    exit_code: int | None = None  # a tool call's, when the CLI said
    stream: StepStream = "stdout"
    seq: int = 0  # the log line it starts at


@dataclass
class Draft:
    """A step being written: a tool call waits for its result, output for more lines."""

    kind: StepKind
    title: str
    stream: StepStream
    seq: int
    exit_code: int | None = None
    parts: list[str] = field(default_factory=list)
    size: int = 0
    left_out: int = 0  # lines (or characters) past MAX_BODY

    def add(self, text: str) -> None:
        if not text:
            return
        room = MAX_BODY - self.size
        if room <= 0:
            self.left_out += text.count("\n") + 1
            return
        if len(text) > room:
            self.left_out += text[room:].count("\n") + 1
            text = text[:room]
        self.parts.append(text)
        self.size += len(text)

    def step(self) -> Step:
        body = "".join(self.parts).rstrip("\n")
        if self.left_out:
            body += f"\n[… {self.left_out} more lines not shown here; the log has them]"
        return Step(
            kind=self.kind,
            title=title(self.title),
            body=body,
            exit_code=self.exit_code,
            stream=self.stream,
            seq=self.seq,
        )


class StepRenderer:
    """Lines in (redacted, with their log seq), steps out. This base knows no events:
    every line is output. `clis.py` has a subclass per CLI that reads its events."""

    def __init__(self, max_steps: int = MAX_STEPS) -> None:
        self.cwd = ""  # the clone: a CLI names its files absolute, a step as the repo's
        self._drafts: list[Draft] = []
        self._max_steps = max_steps
        self._dropped = 0
        self._open_output: Draft | None = None  # the output step lines are added to

    @property
    def full(self) -> bool:
        return len(self._drafts) >= self._max_steps

    def feed_block(self, stream: StepStream, seq: int, data: bytes, count: int) -> None:
        """`count` whole lines of the log as bytes, the first of them line `seq`. Output
        past its step's MAX_BODY is only counted: a session printing 50 MB costs no
        decoding here."""
        draft = self._open_output
        plain = stream != "stdout" or not self.reads_events or self.full
        if plain and draft is not None and draft.stream == stream and draft.size >= MAX_BODY:
            draft.left_out += count
            return
        if self.full and (draft is None or draft.stream != stream):
            self._dropped += count
            return
        self.feed(stream, seq, data.decode("utf-8", "replace").split("\n")[:count])

    def feed(self, stream: StepStream, seq: int, lines: Sequence[str]) -> None:
        """Lines `seq`, `seq + 1`, … of the log, all of one stream."""
        if stream != "stdout" or not self.reads_events:
            self.output(stream, seq, lines)
            return
        start = 0  # the first line not rendered yet
        for index, line in enumerate(lines):
            if self.full:
                break
            event = _event(line)
            if event is None:
                continue
            self.output(stream, seq + start, lines[start:index])  # what came before it
            self._open_output = None
            if not self.event(event, seq + index):
                self.output(stream, seq + index, [line])
            start = index + 1
        self.output(stream, seq + start, lines[start:])

    reads_events = False

    def event(self, event: dict[str, Any], seq: int) -> bool:
        """Render one JSON event; False: not an event of this CLI (shown as output)."""
        return False

    def output(self, stream: StepStream, seq: int, lines: Sequence[str]) -> None:
        if not lines:
            return
        draft = self._open_output
        if draft is None or draft.stream != stream:
            if self.full:
                self._dropped += len(lines)
                return
            first = next((line for line in lines if line.strip()), lines[0])
            draft = self.draft("output", first.strip() or stream, seq, stream=stream)
            self._open_output = draft
        if draft is not None:
            draft.add("\n".join(lines) + "\n")

    def draft(
        self, kind: StepKind, heading: str, seq: int, stream: StepStream = "stdout"
    ) -> Draft | None:
        """A new step, or None once there are MAX_STEPS (its line counted, and said at
        the end)."""
        if self.full:
            self._dropped += 1
            return None
        made = Draft(kind, heading, stream, seq)
        self._drafts.append(made)
        if kind != "output":
            self._open_output = None
        return made

    def note(
        self, heading: str, body: str = "", seq: int = 0, stream: StepStream = "ballet"
    ) -> None:
        made = self.draft("note", heading, seq, stream)
        if made is not None:
            made.add(body)

    def report(self, outcome: str, body: str, seq: int) -> None:
        """The session's report, as Ballet read it: always shown, even past MAX_STEPS."""
        made = Draft("report", f"report: {outcome}", "ballet", seq)
        made.add(body)
        self._drafts.append(made)
        self._open_output = None

    def steps(self) -> list[Step]:
        steps = [draft.step() for draft in self._drafts]
        if self._dropped:
            steps.append(
                Step(
                    kind="note",
                    title=f"{self._dropped} more lines not rendered as steps; the log has them",
                    stream="ballet",
                    seq=steps[-1].seq if steps else 0,
                )
            )
        return steps


def title(text: str) -> str:
    """A step's one-line heading."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= MAX_TITLE else line[: MAX_TITLE - 1] + "…"


def _event(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def render_lines(renderer: StepRenderer, lines: Iterable[str], stream: StepStream) -> list[Step]:
    """A whole stream's lines through `renderer` (fixtures, a transcript)."""
    renderer.feed(stream, 0, list(lines))
    return renderer.steps()


def render_aider_history(text: str, renderer: StepRenderer | None = None) -> StepRenderer:
    """Aider's chat history into `renderer`: `#### ` lines are the prompt (left out),
    `> ` lines aider's own notes (an applied edit, a commit, tokens), the rest the
    model's replies."""
    renderer = renderer or StepRenderer()
    reply: list[str] = []
    notes: list[str] = []

    def flush() -> None:
        if "".join(reply).strip():
            text = "\n".join(reply).strip("\n")
            made = renderer.draft("turn", text, 0)
            if made is not None:
                made.add(text)
        if notes:
            made = renderer.draft("note", notes[0], 0, "stdout")
            if made is not None:
                made.add("\n".join(notes[1:]))
        reply.clear()
        notes.clear()

    fenced = False  # inside a reply's code block, where `>>>>>>> REPLACE` is the reply's
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("```") and not line.startswith("####"):
            fenced = not fenced
        if fenced or line.startswith("```"):
            if notes:
                flush()
            reply.append(line)
        elif line.startswith("####"):
            continue
        elif line.startswith("# aider chat started"):
            flush()
            renderer.note(line.lstrip("# "), stream="stdout")
        elif line.startswith("> ") or line == ">":
            if reply:
                flush()
            note = line[1:].strip()
            if note.startswith("Applied edit to "):
                flush()
                renderer.draft("edit", note.removeprefix("Applied edit to "), 0)
            elif note.startswith("Commit "):
                flush()
                renderer.note(note, stream="stdout")
            elif note:
                notes.append(note)
        else:
            if notes:
                flush()
            reply.append(line)
    flush()
    return renderer
