"""`SessionLog`: a session's whole output, redacted as it arrives, kept within a cap,
streamed to a sink and rendered as steps.

The process's protocol hands it every chunk of stdout and stderr (`feed`, which
is synchronous and never blocks: it runs in the event loop's pipe callback).
Each stream is cut into whole lines (an incomplete one is held until its newline,
so a secret split across two writes is whole when it is redacted), and each
block of whole lines is, in turn:

- given raw, line by line, to the usage meter (`raw_line`): the meter reads JSON
  the CLI printed and keeps nothing but numbers; raw text goes nowhere else;
- redacted (`Redactor.lines()`, one per stream);
- kept: the first `cap // 2` bytes and a rolling last `cap // 2`, with one marker
  line saying what was cut between (`finish`);
- queued for the sink, which a background task hands batches of `LogLine`s at
  most every `flush_seconds` or `flush_lines` lines. If the sink falls behind by
  more than `MAX_PENDING_LINES`, newer lines skip the live stream (a line says
  how many); the finished log still has them;
- rendered into steps (steps.py, clis.py).

A line longer than `MAX_LINE_BYTES` is cut to it with a marker, after being
redacted over a margin past the cut, so a secret that straddles the cut is
replaced whole rather than shown in part.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import structlog

from ballet.sessionlog.redact import LineRedactor, Redactor
from ballet.sessionlog.sink import LiveLines, LogSink, Stream
from ballet.sessionlog.steps import Step, StepRenderer

log = structlog.get_logger(__name__)

DEFAULT_CAP_BYTES = 20 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024
# What is held of a line that has no newline yet; the usage meter reads lines up
# to this long (sessions/capture.py's MAX_LINE_BYTES), longer ones are skipped.
MAX_HELD_BYTES = 1024 * 1024
# How far past a line's cut it is redacted before the cut (a token, a key block).
CUT_MARGIN = 4096
# Lines waiting for a sink that fell behind; past this, newer lines skip the live stream
# (a line says how many): the live tail keeps about this many anyway (sessionlog/live.py).
MAX_PENDING_LINES = 20_000
SINK_FINISH_SECONDS = 60.0
SINK_DRAIN_SECONDS = 10.0
BALLET_PREFIX = b"[ballet] "


async def store_finished(sink: LogSink, job_key: str, text: bytes, steps: Sequence[Step]) -> None:
    """Hand a finished log to its sink, within a bound: a store that fails or hangs
    costs the log (said in the worker's log), never the session."""
    try:
        await asyncio.wait_for(sink.finish(job_key, text, steps), SINK_FINISH_SECONDS)
    except Exception as error:
        log.warning("session log not stored", session=job_key, error=str(error))


@dataclass(frozen=True)
class FinishedLog:
    log: bytes  # the whole redacted log, at most the cap plus one marker line
    steps: tuple[Step, ...]


class _Stream:
    def __init__(self, name: Stream, redactor: LineRedactor) -> None:
        self.name = name
        self.redactor = redactor
        self.held = bytearray()
        self.skipping = False  # the rest of an over-long line is being dropped
        self.raw_line: Callable[[bytes], None] | None = None  # the meter, for the last line


class SessionLog:
    def __init__(
        self,
        job_key: str,
        redactor: Redactor,
        *,
        sink: LogSink | None = None,
        renderer: StepRenderer | None = None,
        cap_bytes: int = DEFAULT_CAP_BYTES,
        flush_seconds: float = 0.1,
        flush_lines: int = 500,
        max_pending_lines: int = MAX_PENDING_LINES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.job_key = job_key
        self._redactor = redactor
        self._sink = sink
        self._renderer = renderer or StepRenderer()
        self._flush_seconds = flush_seconds
        self._flush_lines = flush_lines
        self._clock = clock
        self._streams = {name: _Stream(name, redactor.lines()) for name in ("stdout", "stderr")}
        self._margin = max(CUT_MARGIN, redactor.longest)
        self._seq = 0
        # Kept: the head, then a rolling tail of blocks (bytes, their line count).
        self._head_cap = cap_bytes // 2
        self._tail_cap = cap_bytes - self._head_cap
        self._head: list[bytes] = []
        self._head_size = 0
        self._head_full = False
        self._tail: deque[tuple[bytes, int]] = deque()
        self._tail_size = 0
        self._cut_bytes = 0
        self._cut_lines = 0
        # For the sink: blocks of lines not handed over yet.
        self._live = LiveLines()
        self._skipped_live = 0
        self._skipped_from = 0
        self._max_pending = max_pending_lines
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._sink_failed = False
        self._notes: list[tuple[str, int]] = []

    # -- the process's side: synchronous, never awaits -------------------------------

    def feed(
        self, stream: Stream, data: bytes, raw_line: Callable[[bytes], None] | None = None
    ) -> None:
        """A chunk of the process's `stream`; `raw_line` gets its whole lines, raw."""
        state = self._streams[stream]
        state.raw_line = raw_line
        end = data.rfind(b"\n")
        if end == -1:
            self._hold(state, data)
            return
        if state.held:
            state.held += data[: end + 1]
            block = bytes(state.held)
            state.held.clear()
        else:
            block = data[: end + 1]
        if state.skipping:  # the rest of a line already cut: dropped
            block = block[block.find(b"\n") + 1 :]
            state.skipping = False
        self._hold(state, data[end + 1 :])
        if block:
            self._block(state, block, raw_line)

    def end_of_output(self) -> None:
        """The pipes closed (or the session is over): an unterminated last line counts."""
        for state in self._streams.values():
            if state.held and not state.skipping:
                self._block(state, bytes(state.held) + b"\n", state.raw_line)
            state.held.clear()
            state.skipping = False

    def ballet(self, text: str) -> None:
        """A line of Ballet's own (session started, ended): in the log, live and a note."""
        text = self._redactor.redact(text)
        line = text.encode("utf-8", "replace") + b"\n"
        seq = self._append(BALLET_PREFIX + line, 1, "ballet", live=line)
        self._renderer.note(text, seq=seq)
        self._notes.append((text, seq))

    def transcript(self, text: str, render: Callable[[str, StepRenderer], object]) -> None:
        """The CLI's own transcript (aider's chat history) replaces its output as the
        source of the steps; Ballet's notes so far stay first."""
        renderer = StepRenderer()
        for note, seq in self._notes:
            renderer.note(note, seq=seq)
        render(self._redactor.redact(text), renderer)
        self._renderer = renderer

    def _hold(self, state: _Stream, data: bytes) -> None:
        if state.skipping or not data:
            return
        state.held += data
        if len(state.held) > MAX_HELD_BYTES:
            # No newline in sight: what was held is shown (cut), the rest of the line not.
            line = bytes(state.held[: MAX_LINE_BYTES + self._margin])
            state.held.clear()
            state.skipping = True
            self._block(state, line + b"\n", None, overflowed=True)

    def _block(
        self,
        state: _Stream,
        block: bytes,
        raw_line: Callable[[bytes], None] | None,
        overflowed: bool = False,
    ) -> None:
        lines = block.split(b"\n")
        lines.pop()  # the block ends with a newline
        if raw_line is not None:
            # Called from C (map, drained by a zero-length deque): a Python loop here
            # cost ~0.5 µs a line, as much as the rest of the capture of a short line.
            raw: Iterable[bytes] = filter(None, lines)
            if len(block) > MAX_HELD_BYTES:
                raw = (line for line in raw if len(line) <= MAX_HELD_BYTES)
            deque(map(raw_line, raw), maxlen=0)
        if len(block) > MAX_LINE_BYTES and max(map(len, lines)) > MAX_LINE_BYTES:
            redacted = b"".join(self._cut(state, line, overflowed) for line in lines)
        else:
            redacted = state.redactor.block(block)
        # Nothing redacted (nearly always): the sink gets the lines split already, which
        # it decodes one by one, 3x faster than splitting the text again for long lines.
        self._append(redacted, len(lines), state.name, lines if redacted is block else None)

    def _cut(self, state: _Stream, line: bytes, overflowed: bool) -> bytes:
        if len(line) <= MAX_LINE_BYTES:
            return state.redactor.block(line + b"\n")
        # Redacted over a margin past the cut, so a secret across it goes whole.
        kept = state.redactor.block(line[: MAX_LINE_BYTES + self._margin])
        cut = len(line) - MAX_LINE_BYTES if not overflowed else None
        note = (
            f" [… {cut} more bytes of this line cut]" if cut else " [… the rest of this line cut]"
        ).encode()
        kept = kept[: MAX_LINE_BYTES - len(note)]
        # Never end inside a UTF-8 character: the one the cut split (and any byte of the
        # line that is no UTF-8) is dropped, so the line stays within the limit as text.
        kept = kept.decode("utf-8", "ignore").encode()
        return kept + note + b"\n"

    def _append(
        self, data: bytes, count: int, stream: Stream, live: bytes | list[bytes] | None = None
    ) -> int:
        """Keep `count` redacted lines, queue them for the sink, render them; their first seq.
        `live`: what the sink gets instead (a Ballet line without its prefix, or the
        lines of `data` split)."""
        seq = self._seq
        self._seq += count
        self._keep(data, count)
        if self._sink is not None and not self._sink_failed:
            if stream != "ballet" and self._live.count + count > self._max_pending:
                if not self._skipped_live:
                    self._skipped_from = seq
                self._skipped_live += count
            else:
                self._note_skipped()
                self._live.add(stream, seq, self._clock(), data if live is None else live, count)
                if self._live.count >= self._flush_lines:
                    self._wake.set()
        if stream != "ballet":
            self._renderer.feed_block(stream, seq, data, count)
        return seq

    def _keep(self, data: bytes, count: int) -> None:
        if not self._head_full:
            room = self._head_cap - self._head_size
            if len(data) <= room:
                self._head.append(data)
                self._head_size += len(data)
                return
            split = data.rfind(b"\n", 0, room) + 1
            if split:
                self._head.append(data[:split])
                self._head_size += split
                data = data[split:]
                count = data.count(b"\n")
            self._head_full = True
        self._tail.append((data, count))
        self._tail_size += len(data)
        while self._tail and self._tail_size - len(self._tail[0][0]) >= self._tail_cap:
            dropped, lines = self._tail.popleft()
            self._tail_size -= len(dropped)
            self._cut_bytes += len(dropped)
            self._cut_lines += lines

    # -- what the session reads ------------------------------------------------------

    @property
    def lines(self) -> int:
        return self._seq

    def tail(self, chars: int) -> str:
        """The last `chars` characters of the redacted log so far, without Ballet's lines."""
        wanted, parts = chars * 4, []
        blocks = [b for b, _ in self._tail] if self._tail else self._head
        for block in reversed(blocks):
            parts.append(block)
            wanted -= len(block)
            if wanted <= 0:
                break
        if wanted > 0 and self._tail:  # a short tail: the head's end before it
            for block in reversed(self._head):
                parts.append(block)
                wanted -= len(block)
                if wanted <= 0:
                    break
        lines = b"".join(reversed(parts)).split(b"\n")
        own = b"".join(line + b"\n" for line in lines if not line.startswith(BALLET_PREFIX))
        return own.decode("utf-8", "replace").rstrip("\n")[-chars:]

    def text(self) -> bytes:
        """The whole redacted log: the head, the marker of what was cut, the tail."""
        tail = list(self._tail)
        cut_bytes, cut_lines = self._cut_bytes, self._cut_lines
        size = sum(len(b) for b, _ in tail)
        if tail and size > self._tail_cap:  # trim the oldest block to a line boundary
            first, lines = tail[0]
            start = first.find(b"\n", size - self._tail_cap - 1) + 1 or len(first)
            cut_bytes += start
            cut_lines += first.count(b"\n", 0, start)
            tail[0] = (first[start:], lines)
        marker = b""
        if cut_bytes:
            marker = (
                BALLET_PREFIX
                + (
                    f"[… {cut_bytes} bytes in {cut_lines} lines cut here: the log keeps its first"
                    f" {self._head_cap} and last {self._tail_cap} bytes …]\n"
                ).encode()
            )
        return b"".join([*self._head, marker, *(b for b, _ in tail)])

    # -- the sink's side -------------------------------------------------------------

    def start(self) -> None:
        """Start handing lines to the sink (call from the running event loop)."""
        if self._sink is not None and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            # A timer, not wait_for: that makes a task per wait, and a session printing
            # fast wakes this once per pipe read.
            timer = loop.call_later(self._flush_seconds, self._wake.set)
            await self._wake.wait()
            timer.cancel()
            self._wake.clear()
            await self._send()
            if self._closing:
                return

    def _note_skipped(self) -> None:
        """Where lines skipped the live stream, a line saying so, in the seq of the first
        skipped (no line the sink gets has it: the seqs it sees stay in order)."""
        if self._skipped_live:
            note = (
                f"[… {self._skipped_live} lines not streamed live: the sink fell behind;"
                " the finished log has them …]\n"
            )
            self._live.add("ballet", self._skipped_from, self._clock(), note.encode(), 1)
            self._skipped_live = 0

    async def _send(self) -> None:
        assert self._sink is not None
        self._note_skipped()
        batch = self._live.take()
        for start in range(0, len(batch), self._flush_lines):
            try:
                await self._sink.append(self.job_key, batch[start : start + self._flush_lines])
            except Exception as error:  # the session goes on; its log is what is lost
                log.warning("session log sink failed", session=self.job_key, error=str(error))
                self._sink_failed = True
                return

    async def finish(self, ended: str, report: tuple[str, str] | None = None) -> FinishedLog:
        """End the log with Ballet's `ended` line (and the report's outcome and body as
        the last step), hand the rest to the sink, and return the whole of it."""
        self.end_of_output()
        self.ballet(ended)
        if report is not None:
            self._renderer.report(report[0], self._redactor.redact(report[1]), self._seq)
        steps = tuple(self._renderer.steps())
        text = self.text()
        await self.aclose()
        # Even when live lines failed (Redis briefly gone), the finished log is the part
        # that lasts: it is always offered.
        if self._sink is not None:
            await store_finished(self._sink, self.job_key, text, steps)
        return FinishedLog(text, steps)

    def cancel(self) -> None:
        """Stop the pump now, handing nothing more over (the session was cancelled)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()

    async def aclose(self) -> None:
        """Stop the pump, once it has handed over what is pending (within a bound)."""
        task, self._task = self._task, None
        if task is None:
            return
        self._closing = True
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), SINK_DRAIN_SECONDS)
        except TimeoutError:
            log.warning("session log sink too slow; live lines dropped", session=self.job_key)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
