"""Every refused delivery says what went wrong and what to do next."""

from __future__ import annotations

import httpx
import pytest
from arq.connections import ArqRedis
from webhook_signing import delivery_headers

pytestmark = pytest.mark.anyio


async def refusal(client: httpx.AsyncClient, body: bytes, headers: dict[str, str]) -> str:
    response = await client.post("/webhooks", content=body, headers=headers)
    assert response.status_code in (400, 401, 413), response.text
    message: str = response.json()["message"]
    return message


async def test_each_refusal_names_the_fix(client: httpx.AsyncClient, redis: ArqRedis) -> None:
    body = b'{"action": "opened"}'
    big = b" " * (26 * 1024 * 1024)
    no_event = {k: v for k, v in delivery_headers("issues", body).items() if k != "X-GitHub-Event"}
    cases = {
        "GitHub sends at most 25 MB": (big, delivery_headers("issues", big)),
        "only GitHub's webhook deliveries (which carry both) are accepted here": (body, no_event),
        "matches BALLET_WEBHOOK_SECRET": (body, delivery_headers("issues", body, secret="x")),
        "set the App's webhook content type to application/json": (
            b"payload=%7B%7D",
            delivery_headers("issues", b"payload=%7B%7D"),
        ),
    }
    for fix, (content, headers) in cases.items():
        assert fix in await refusal(client, content, headers)
    assert await redis.dbsize() == 0
