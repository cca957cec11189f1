"""Which failed requests githubkit sends again by itself, and which it leaves to the effect."""

from __future__ import annotations

import httpx
import pytest
from ballet.github.client import ServerErrorRetry
from githubkit.exception import GitHubException, RequestError, RequestFailed, RequestTimeout
from githubkit.response import Response

API = "https://api.github.com/repos/o/r"


def failed(method: str, path: str, status: int) -> RequestFailed:
    request = httpx.Request(method, f"{API}{path}")
    return RequestFailed(Response(httpx.Response(status, request=request), object))


@pytest.mark.parametrize(
    ("exc", "again"),
    [
        (failed("GET", "/pulls/1", 502), True),
        (failed("PATCH", "/issues/comments/9", 502), True),
        (failed("POST", "/issues/1/labels", 503), True),
        # GitHub may have made the comment or check run before failing: a second POST
        # would double it, so the effect's retry (which looks for it first) decides.
        (failed("POST", "/issues/1/comments", 502), False),
        (failed("POST", "/check-runs", 504), False),
        (failed("GET", "/pulls/1", 404), False),
        (RequestTimeout(httpx.ReadTimeout("slow", request=httpx.Request("GET", API))), True),
        (RequestTimeout(httpx.ReadTimeout("slow", request=httpx.Request("POST", API))), False),
        (RequestError(httpx.ReadError("reset", request=httpx.Request("GET", API))), True),
        (RequestError(httpx.ReadError("reset", request=httpx.Request("PATCH", API))), False),
        (RequestError(ValueError("no request at all")), False),
    ],
)
def test_what_is_retried(exc: GitHubException, again: bool) -> None:
    retry = ServerErrorRetry(max_retries=3)
    assert retry(exc, 0)[0] == again
    assert retry(exc, 3)[0] is False  # bounded
