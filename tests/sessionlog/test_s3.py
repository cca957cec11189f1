"""The same session logs against a real S3-compatible server (moto's, on loopback),
named as a deployment names it: BALLET_LOG_STORE=s3://bucket/prefix and its options."""

from __future__ import annotations

import asyncio
import gzip
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from arq.connections import ArqRedis
from ballet.sessionlog.objects import LogStoreConfigError
from ballet.sessionlog.paths import log_paths
from ballet.sessionlog.steps import Step
from ballet.sessionlog.store import SessionLogs
from ballet.settings import Settings
from obstore.store import S3Store
from sessionlog_kit import JOB_KEY, S3Server, lines

pytestmark = pytest.mark.anyio

STEPS = [Step(kind="tool", title="make test", body="ok", exit_code=0, seq=1)]


def s3_settings(server: S3Server, prefix: str, tmp_path: Path, **more: object) -> Settings:
    return Settings(
        data_dir=tmp_path,
        log_store=f"s3://{server.bucket}/{prefix}",
        log_store_options=server.options(),
        **more,  # type: ignore[arg-type]
    )


@pytest.fixture
def prefix() -> str:
    """A prefix of this test's own in the shared bucket."""
    return f"ballet-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def s3_logs(s3_server: S3Server, prefix: str, redis: ArqRedis, tmp_path: Path) -> SessionLogs:
    return SessionLogs.from_settings(s3_settings(s3_server, prefix, tmp_path), redis)


async def test_a_finished_log_goes_to_the_bucket_gzip_and_reads_back(
    s3_logs: SessionLogs, s3_server: S3Server, prefix: str, tmp_path: Path
) -> None:
    log = "".join(f"{i} ✓ output line\n" for i in range(50_000)).encode()
    await s3_logs.append(JOB_KEY, lines(3))
    await s3_logs.finish(JOB_KEY, log, STEPS)

    # What a plain S3 client finds in the bucket: gzip of the very log.
    paths = log_paths(JOB_KEY)
    stored = s3_server.client.get_object(Bucket=s3_server.bucket, Key=f"{prefix}/{paths.log}")
    body = stored["Body"].read()
    assert body[:2] == b"\x1f\x8b"
    assert gzip.decompress(body) == log
    listed = s3_server.client.list_objects_v2(Bucket=s3_server.bucket, Prefix=f"{prefix}/")
    assert sorted(o["Key"] for o in listed["Contents"]) == sorted(
        f"{prefix}/{p}" for p in (paths.log, paths.steps, paths.meta)
    )
    assert not (tmp_path / "logs").exists()  # nothing kept on this machine

    found = await s3_logs.read(JOB_KEY)
    assert found is not None and found.log == log and found.steps == tuple(STEPS)
    raw = await s3_logs.read_raw(JOB_KEY, decompress=True)
    assert raw is not None and b"".join([c async for c in raw.chunks]) == log
    assert (await s3_logs.live(JOB_KEY)).finished


async def test_the_sweep_deletes_old_logs_from_the_bucket(
    s3_logs: SessionLogs, s3_server: S3Server, prefix: str
) -> None:
    old, young = "octo/widgets#1:implement:1:1", "octo/widgets#2:implement:1:1"
    await s3_logs.finish(old, b"old\n", [])
    written = last_modified(s3_server, prefix, old)
    # S3 keeps a modified time to the second: the young log is written a second later.
    await asyncio.sleep(1.6)
    await s3_logs.finish(young, b"young\n", [])

    # `now` where the retention (30 days) has just passed for the old log alone.
    now = written + timedelta(days=30, milliseconds=500)
    assert await s3_logs.sweep(now) == 3
    assert not await s3_logs.exists(old) and await s3_logs.exists(young)
    listed = s3_server.client.list_objects_v2(Bucket=s3_server.bucket, Prefix=f"{prefix}/")
    assert len(listed["Contents"]) == 3
    assert await s3_logs.sweep(now) == 0


def last_modified(server: S3Server, prefix: str, job_key: str) -> datetime:
    """The newest modified time of the job's objects, as the bucket keeps it."""
    paths = log_paths(job_key)
    heads = [
        server.client.head_object(Bucket=server.bucket, Key=f"{prefix}/{path}")
        for path in (paths.log, paths.steps, paths.meta)
    ]
    return max(head["LastModified"] for head in heads).astimezone(UTC)


async def test_options_name_the_endpoint_client_and_credentials(
    s3_server: S3Server, prefix: str, redis: ArqRedis, tmp_path: Path
) -> None:
    """The provider's own spelling (aws_…) and an explicit allow_http work too."""
    options = (
        f"AWS_ENDPOINT={s3_server.endpoint},aws_region=us-east-1,allow_http=true,"
        "aws_access_key_id=ballet-test,aws_secret_access_key=ballet-test-secret,timeout=20s"
    )
    settings = Settings(
        data_dir=tmp_path, log_store=f"s3://{s3_server.bucket}/{prefix}", log_store_options=options
    )
    logs = SessionLogs.from_settings(settings, redis)
    assert isinstance(logs._objects, S3Store)
    await logs.finish(JOB_KEY, b"hello\n", [])
    assert (await logs.read(JOB_KEY)) is not None


@pytest.mark.parametrize(
    ("url", "options", "says"),
    [
        ("ftp://bucket/prefix", None, "not an object store URL"),
        ("s3://bucket/prefix", "no-equals-sign", "not key=value"),
        ("s3://bucket/prefix", "flavour=sup3r-secret", "flavour"),
        ("gs://bucket/prefix", "endpoint=sup3r-secret", "endpoint"),
    ],
)
async def test_a_store_that_cannot_be_made_says_which_setting(
    url: str, options: str | None, says: str, redis: ArqRedis, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, log_store=url, log_store_options=options)
    with pytest.raises(LogStoreConfigError, match=says) as raised:
        SessionLogs.from_settings(settings, redis)
    assert "sup3r-secret" not in str(raised.value)  # an option's value may be a credential
