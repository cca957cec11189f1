"""SessionLog: the whole output, redacted line by line however it arrives, capped with
a marker, streamed to the sink in batches and never blocking the process's pipe.

The first test runs a real confined session that prints 30 MB; the others feed a
SessionLog directly, chunk by chunk, as the process protocol does."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from ballet.core.config import Runtime
from ballet.sessionlog.capture import MAX_LINE_BYTES, SessionLog
from ballet.sessionlog.redact import Redactor
from ballet.sessionlog.sink import LogLine, NullSink
from ballet.sessionlog.steps import Step
from ballet.sessions import SessionOptions, Workspaces
from session_helpers import MakeSpec, WriteScript
from session_logs import RecordingSink, planted_key, run_logged

MB = 1024 * 1024
CAP = 20 * MB
PRINT_30_MB = """
import json, os, sys
out = sys.stdout.buffer
line = 0
written = 0
while written < 30 * 1024 * 1024:
    chunk = b"".join(b"line %08d of the flood, nothing secret in it at all\\n" % (line + i)
                     for i in range(2000))
    out.write(chunk)
    line += 2000
    written += len(chunk)
out.flush()
sys.stderr.write("flooded %d lines\\n" % line)
json.dump({"outcome": "done", "summary": "flooded"}, open(os.environ["BALLET_REPORT"], "w"))
"""


def test_a_session_printing_30_mb_keeps_its_head_its_tail_and_a_marker(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
) -> None:
    write_script("agent", PRINT_30_MB)
    sink = RecordingSink(keep=False)
    spec = make_spec(runtime=Runtime(adapter="command", command=("agent",)))
    result = run_logged(spec, workspaces, parent_env, options, sink)
    assert result.failure_reason is None, result.report.summary
    assert sink.log is not None
    log = sink.log
    assert CAP < len(log) <= CAP + 300  # the cap and the marker line, no more
    markers = re.findall(rb"\[ballet\] \[\xe2\x80\xa6 (\d+) bytes in (\d+) lines cut here", log)
    assert len(markers) == 1
    cut_bytes, cut_lines = (int(n) for n in markers[0])
    printed = re.search(rb"flooded (\d+) lines", log)
    assert printed is not None
    total_lines = int(printed.group(1))
    assert 30 * MB - CAP < cut_bytes < 30 * MB - CAP + 2 * MB
    # The head: Ballet's first line, then the session's from its first.
    head = log[:200].splitlines()
    assert head[0].startswith(b"[ballet] session started (command")
    assert head[1] == b"line 00000000 of the flood, nothing secret in it at all"
    # The tail: the last line printed, the stderr line, Ballet's end.
    tail = log[-400:].splitlines()
    last = b"line %08d of the flood, nothing secret in it at all" % (total_lines - 1)
    assert tail[-3:-1] == [last, b"flooded %d lines" % total_lines]
    assert tail[-1].startswith(b"[ballet] session ended (exit code 0")
    # Kept lines and cut lines add up to every line there was.
    kept = log.count(b"\n") - 1  # less the marker
    assert kept + cut_lines == total_lines + 1 + 2  # the stderr line, Ballet's two
    # Live, the sink got every line, in order, in batches of at most 500.
    assert sink.appended == total_lines + 3
    assert max(sink.batches) <= 500
    firsts = [first for first, _ in sink.seqs]
    assert firsts == sorted(firsts) and sink.seqs[0][0] == 0
    # Steps stay small: one output step for the flood, its body bounded.
    outputs = [step for step in sink.steps if step.kind == "output"]
    assert [step.stream for step in outputs] == ["stdout", "stderr"]
    assert len(outputs[0].body) < 5000 and "more lines not shown here" in outputs[0].body


async def _log(
    redactor: Redactor, chunks: list[tuple[str, bytes]], sink: RecordingSink | None = None
) -> tuple[bytes, list[Step], list[LogLine]]:
    sink = sink or RecordingSink()
    log = SessionLog("octo/demo#7:implement:1:1", redactor, sink=sink, flush_seconds=0.01)
    log.start()
    for stream, data in chunks:
        log.feed("stdout" if stream == "stdout" else "stderr", data)
    finished = await log.finish("session ended (test)")
    assert sink.log == finished.log
    return finished.log, list(finished.steps), sink.lines


def test_a_value_split_anywhere_across_chunks_is_redacted() -> None:
    key = planted_key()
    data = f'one {key} two\n{{"k": "{key}"}}\n'.encode()
    redactor = Redactor({"PLANTED_KEY": key})
    for size in (1, 3, 7, 20, 41, len(data)):
        chunks = [("stdout", data[i : i + size]) for i in range(0, len(data), size)]
        log, steps, lines = asyncio.run(_log(redactor, chunks))
        text = log.decode()
        assert key not in text
        assert "one [redacted:PLANTED_KEY] two" in text
        assert '{"k": "[redacted:PLANTED_KEY]"}' in text
        assert all(key not in line.text for line in lines)
        assert all(key not in step.model_dump_json() for step in steps)


def test_a_private_key_block_is_hidden_line_by_line_across_chunks() -> None:
    pem = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "QyNTUxOQAAACDn0mZ1c2VkAAAAAAAAAAAAAAAAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    data = f"before\n{pem}after\n".encode()
    chunks = [("stdout", data[:50]), ("stdout", data[50:120]), ("stdout", data[120:])]
    log, _, _ = asyncio.run(_log(Redactor(), chunks))
    lines = log.decode().splitlines()
    assert lines[:6] == ["before", *["[redacted:private-key]"] * 4, "after"]


def test_a_line_longer_than_the_limit_is_cut_and_a_secret_across_the_cut_is_not_shown() -> None:
    key = planted_key()
    line = b"x" * (MAX_LINE_BYTES - 20) + key.encode() + b"y" * 200_000 + b"\n"
    chunks = [("stdout", line[i : i + 65536]) for i in range(0, len(line), 65536)]
    log, _, lines = asyncio.run(_log(Redactor({"PLANTED_KEY": key}), chunks))
    long = [entry for entry in lines if entry.text.startswith("xxx")]
    assert len(long) == 1
    assert len(long[0].text.encode()) <= MAX_LINE_BYTES
    assert "more bytes of this line cut]" in long[0].text
    assert key[:10] not in log.decode() and key[:10] not in long[0].text


def test_a_line_with_no_end_is_held_only_so_far() -> None:
    """2 MB with no newline: the log shows its start, cut, and drops the rest."""
    chunks = [("stdout", b"z" * 65536) for _ in range(32)] + [("stdout", b"zz\nnext\n")]
    log, _, lines = asyncio.run(_log(Redactor(), chunks))
    texts = [line.text for line in lines if line.stream == "stdout"]
    assert texts[0].endswith("[… the rest of this line cut]")
    assert texts[1:] == ["next"]
    assert len(log) < 2 * MAX_LINE_BYTES


def test_lines_reach_the_sink_in_batches_while_the_session_runs() -> None:
    async def scenario() -> RecordingSink:
        sink = RecordingSink()
        log = SessionLog("k", Redactor(), sink=sink, flush_seconds=0.05, flush_lines=500)
        log.start()
        log.feed("stdout", b"first\n")
        await asyncio.sleep(0.2)
        assert [line.text for line in sink.lines] == ["first"]  # within ~100 ms, not at the end
        log.feed("stdout", b"".join(b"%d\n" % i for i in range(1200)))
        await asyncio.sleep(0.2)
        assert sink.appended == 1201 and max(sink.batches) <= 500
        await log.finish("ended")
        return sink

    sink = asyncio.run(scenario())
    assert [line.seq for line in sink.lines] == list(range(len(sink.lines)))


class SlowSink(RecordingSink):
    async def append(self, job_key: str, lines: object) -> None:
        await asyncio.sleep(0.2)
        await super().append(job_key, lines)  # type: ignore[arg-type]


class BrokenSink(RecordingSink):
    async def append(self, job_key: str, lines: object) -> None:
        raise ConnectionError("redis went away")


def test_a_sink_that_falls_behind_or_fails_never_stops_the_session() -> None:
    async def scenario(sink: RecordingSink) -> bytes:
        log = SessionLog("k", Redactor(), sink=sink, flush_seconds=0.01, max_pending_lines=5000)
        log.start()
        started = asyncio.get_running_loop().time()
        for i in range(300):  # the protocol's callback never waits for the sink
            log.feed("stdout", b"".join(b"%d.%d\n" % (i, j) for j in range(1000)))
        assert asyncio.get_running_loop().time() - started < 5
        return (await log.finish("ended")).log

    slow = SlowSink()
    log = asyncio.run(scenario(slow))
    assert log.count(b"\n") == 300_000 + 1
    skipped = [line for line in slow.lines if "not streamed live" in line.text]
    assert len(skipped) == 1 and skipped[0].stream == "ballet"
    assert "295000 lines not streamed live" in skipped[0].text
    assert [line.seq for line in slow.lines] == sorted(line.seq for line in slow.lines)
    assert slow.lines[-1].text == "ended"  # Ballet's own lines always go live
    broken = BrokenSink()
    assert asyncio.run(scenario(broken)).count(b"\n") == 300_001
    assert broken.appended == 0 and broken.log is not None  # live given up, not the log


def test_the_null_sink_and_no_sink_keep_the_same_log() -> None:
    async def scenario(sink: NullSink | None) -> bytes:
        log = SessionLog("k", Redactor(), sink=sink)
        log.start()
        log.feed("stdout", b"a\nb\n")
        log.feed("stderr", b"c")
        return (await log.finish("ended")).log

    assert asyncio.run(scenario(NullSink())) == asyncio.run(scenario(None))
    assert asyncio.run(scenario(None)) == b"a\nb\nc\n[ballet] ended\n"


def test_the_tail_is_the_redacted_end_without_ballets_lines(tmp_path: Path) -> None:
    key = planted_key()
    log = SessionLog("k", Redactor({"PLANTED_KEY": key}))
    log.ballet("session started")
    log.feed("stdout", f"working\nboom {key}\n".encode())
    assert log.tail(100) == "working\nboom [redacted:PLANTED_KEY]"
    assert log.tail(9) == "PLANTED_KEY]"[-9:]
