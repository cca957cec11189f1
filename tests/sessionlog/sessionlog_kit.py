"""What the session-log tests share besides fixtures: a job key, lines, the S3 server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ballet.sessionlog.sink import LogLine, Stream

JOB_KEY = "octo/widgets#12:implement:1:1"


def lines(count: int, start: int = 0, stream: Stream = "stdout") -> list[LogLine]:
    return [
        LogLine(seq=i, stream=stream, text=f"line {i} ✓", at=1_700_000_000.0 + i)
        for i in range(start, start + count)
    ]


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str
    client: Any  # boto3's S3 client: a plain reader of what Ballet stored

    def options(self) -> str:
        """BALLET_LOG_STORE_OPTIONS for this server (moto takes any credentials)."""
        return (
            f"endpoint={self.endpoint},region=us-east-1,"
            "access_key_id=ballet-test,secret_access_key=ballet-test-secret"
        )
