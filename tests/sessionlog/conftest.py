"""Fixtures of the session-log area: a real Valkey database of its own, the logs
in a local directory, and a real S3-compatible server (moto's) on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from area_fixtures import area_redis_url, emptied_pool
from arq.connections import ArqRedis
from ballet.sessionlog.objects import open_object_store
from ballet.sessionlog.store import SessionLogs
from sessionlog_kit import S3Server

# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 13


@pytest.fixture
def sessionlog_redis_url(redis_url: str) -> str:
    return area_redis_url(redis_url, REDIS_DB)


@pytest.fixture
async def redis(sessionlog_redis_url: str) -> AsyncIterator[ArqRedis]:
    async with emptied_pool(sessionlog_redis_url) as pool:
        yield pool


@pytest.fixture
def logs(redis: ArqRedis, tmp_path: Path) -> SessionLogs:
    """The session logs as `ballet serve` keeps them: BALLET_DATA_DIR/logs."""
    return SessionLogs(redis, open_object_store(None, tmp_path))


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on a loopback port the system picks, with one bucket."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="ballet-test",
            aws_secret_access_key="ballet-test-secret",
        )
        client.create_bucket(Bucket="ballet-logs")
        yield S3Server(endpoint=endpoint, bucket="ballet-logs", client=client)
    finally:
        server.stop()
