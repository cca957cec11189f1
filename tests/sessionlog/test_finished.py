"""A finished session's log: kept gzip in the object store with its steps and
facts, read back byte for byte, whole or streamed, under a path no job key
can break out of."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from ballet.sessionlog.paths import log_paths
from ballet.sessionlog.steps import Step
from ballet.sessionlog.store import SessionLogs
from sessionlog_kit import JOB_KEY

pytestmark = pytest.mark.anyio

STEPS = [
    Step(kind="turn", title="Reading the issue", body="It asks for a widget.", seq=0),
    Step(kind="tool", title="pytest -q", body="3 passed", exit_code=0, seq=2),
    Step(kind="output", title="stderr", body="warning: ✗", stream="stderr", seq=5),
]


def a_log(size: int) -> bytes:
    """Log-like bytes: numbered lines, some not UTF-8, the last without a newline."""
    out = bytearray()
    i = 0
    while len(out) < size:
        out += f"{i:08d} tool output ✓ value={i * 7919 % 10007}\n".encode()
        if i % 97 == 0:
            out += b"\xff\xfe raw bytes\n"
        i += 1
    return bytes(out[:size])


async def test_a_finished_log_reads_back_identical_with_its_steps(logs: SessionLogs) -> None:
    log = a_log(300_000)
    await logs.finish(JOB_KEY, log, STEPS)

    assert await logs.exists(JOB_KEY)
    found = await logs.read(JOB_KEY)
    assert found is not None
    assert found.log == log
    assert found.steps == tuple(STEPS)
    assert found.meta.job_key == JOB_KEY
    assert found.meta.size == len(log)
    assert found.meta.lines == log.count(b"\n") + 1  # the last line has no newline
    assert found.meta.steps == 3
    assert found.meta.stored_size < len(log) / 3  # compressed


async def test_the_stored_log_is_gzip_on_disk(logs: SessionLogs, tmp_path: Path) -> None:
    log = a_log(10_000)
    await logs.finish(JOB_KEY, log, STEPS)
    stored = tmp_path / "logs" / log_paths(JOB_KEY).log
    assert gzip.decompress(stored.read_bytes()) == log


async def test_a_download_streams_the_gzip_or_the_log(logs: SessionLogs) -> None:
    log = a_log(2_000_000)
    await logs.finish(JOB_KEY, log, [])

    raw = await logs.read_raw(JOB_KEY)
    assert raw is not None and raw.encoding == "gzip"
    packed = [chunk async for chunk in raw.chunks]
    assert gzip.decompress(b"".join(packed)) == log
    assert len(b"".join(packed)) == raw.meta.stored_size

    plain = await logs.read_raw(JOB_KEY, decompress=True)
    assert plain is not None and plain.encoding is None
    chunks = [chunk async for chunk in plain.chunks]
    assert b"".join(chunks) == log


async def test_an_unfinished_session_has_nothing_to_read(logs: SessionLogs) -> None:
    assert not await logs.exists(JOB_KEY)
    assert await logs.read(JOB_KEY) is None
    assert await logs.read_raw(JOB_KEY) is None
    assert await logs.meta(JOB_KEY) is None


async def test_finishing_again_replaces_the_log(logs: SessionLogs) -> None:
    await logs.finish(JOB_KEY, b"first\n", STEPS)
    await logs.finish(JOB_KEY, b"second\n", [])
    found = await logs.read(JOB_KEY)
    assert found is not None and found.log == b"second\n" and found.steps == ()


@pytest.mark.parametrize(
    "job_key",
    [
        "octo/widgets#12:implement:1:1:plan",
        "../../etc/passwd#1:x",
        "o/r#1/../../..:implement:1:1",
        "ünï/cødé 💥#٣:review:2:1",
        "./..#..:a/b\\c:d",
        "no ticket at all",
        "",
    ],
)
async def test_any_job_key_maps_to_a_safe_path_and_round_trips(
    logs: SessionLogs, tmp_path: Path, job_key: str
) -> None:
    paths = log_paths(job_key)
    for path in (paths.log, paths.steps, paths.meta):
        segments = path.split("/")
        assert segments[0] == "logs" and len(segments) in (3, 5)
        assert all(s not in ("", ".", "..") for s in segments)
        assert all(c.isascii() and (c.isalnum() or c in "._-") for s in segments for c in s)

    await logs.finish(job_key, f"log of {job_key}\n".encode(), STEPS)
    found = await logs.read(job_key)
    assert found is not None
    assert found.log == f"log of {job_key}\n".encode() and found.meta.job_key == job_key
    root = tmp_path / "logs"
    written = [Path(d, f) for d, _, files in os.walk(root) for f in files]
    assert all(p.resolve().is_relative_to(root.resolve()) for p in written)


def test_a_tickets_logs_share_a_folder_and_others_do_not() -> None:
    implement = log_paths("octo/widgets#12:implement:1:1")
    review = log_paths("octo/widgets#12:review:1:1")
    other = log_paths("octo/widgets#13:implement:1:1")
    assert implement.log.startswith("logs/octo/widgets/12/")
    assert implement.log.rsplit("/", 1)[0] == review.log.rsplit("/", 1)[0]
    assert implement.log != review.log
    assert other.log.startswith("logs/octo/widgets/13/")
