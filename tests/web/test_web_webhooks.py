"""POST /webhooks over the real app and a real Valkey."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from arq.connections import ArqRedis
from ballet.github.translate import HANDLED_EVENTS
from ballet.queue import DELIVERY_MARKER_PREFIX, EVENTS_QUEUE
from ballet.settings import Settings
from ballet.web import create_app
from webhook_signing import SECRET, delivery_headers

pytestmark = pytest.mark.anyio


def all_payloads(webhooks_dir: Path) -> list[tuple[str, Path]]:
    return [(p.parent.name, p) for p in sorted(webhooks_dir.glob("*/*.json"))]


async def queued_ids(redis: ArqRedis) -> list[str]:
    return [job_id.decode() for job_id in await redis.zrange(EVENTS_QUEUE, 0, -1)]


async def test_every_real_payload_is_answered_and_enqueued_once(
    client: httpx.AsyncClient, redis: ArqRedis, webhooks_dir: Path
) -> None:
    payloads = all_payloads(webhooks_dir)
    assert len(payloads) > 100
    expected: list[str] = []
    ignored: set[str] = set()
    for event, path in payloads:
        body = path.read_bytes()
        delivery_id = f"{event}-{path.name}"
        response = await client.post(
            "/webhooks", content=body, headers=delivery_headers(event, body, delivery_id)
        )
        assert response.is_success, (path, response.text)
        if event == "ping":
            assert response.json() == {"status": "pong"}
        elif event not in HANDLED_EVENTS:  # e.g. pull_request_review_comment: never read
            assert response.status_code == 202
            assert response.json()["status"] == "ignored"
            ignored.add(event)
        else:
            assert response.status_code == 202
            assert response.json()["status"] == "accepted"
            expected.append(delivery_id)
    assert sorted(await queued_ids(redis)) == sorted(expected)
    assert ignored == {"pull_request_review_comment"}


async def test_a_redelivery_is_recognised_and_not_queued_again(
    client: httpx.AsyncClient, redis: ArqRedis, webhooks_dir: Path
) -> None:
    body = (webhooks_dir / "issues" / "labeled.payload.json").read_bytes()
    headers = delivery_headers("issues", body, "same-delivery")
    answers = [(await client.post("/webhooks", content=body, headers=headers)) for _ in range(5)]
    assert [a.json()["status"] for a in answers] == ["accepted"] + ["duplicate"] * 4
    assert await queued_ids(redis) == ["same-delivery"]
    # The marker outlives arq's results by days: GitHub redelivers for days.
    ttl = await redis.ttl(DELIVERY_MARKER_PREFIX + "same-delivery")
    assert ttl > 7 * 24 * 3600


@pytest.mark.parametrize(
    ("signature", "why"),
    [(None, "missing"), ("sha256=" + "0" * 64, "wrong"), ("sha1=abc", "sha1 only")],
)
async def test_unsigned_or_badly_signed_deliveries_are_refused(
    client: httpx.AsyncClient, redis: ArqRedis, signature: str | None, why: str
) -> None:
    body = b'{"action": "labeled"}'
    headers = delivery_headers("issues", body)
    if signature is None:
        del headers["X-Hub-Signature-256"]
    else:
        headers["X-Hub-Signature-256"] = signature
    response = await client.post("/webhooks", content=body, headers=headers)
    assert response.status_code == 401, why
    assert response.json()["error"] == "signature"
    assert "BALLET_WEBHOOK_SECRET" in response.json()["message"]
    assert await redis.dbsize() == 0


async def test_a_body_signed_with_another_secret_is_refused(
    client: httpx.AsyncClient, redis: ArqRedis
) -> None:
    body = b'{"action": "labeled"}'
    response = await client.post(
        "/webhooks", content=body, headers=delivery_headers("issues", body, secret="other")
    )
    assert response.status_code == 401
    assert await redis.dbsize() == 0


async def test_malformed_json_is_refused(client: httpx.AsyncClient, redis: ArqRedis) -> None:
    for body in (b'{"action": ', b"payload=%7B%7D", b"[1, 2]", b"\xff\xfe"):
        response = await client.post(
            "/webhooks", content=body, headers=delivery_headers("issues", body)
        )
        assert response.status_code == 400, body
        assert response.json()["error"] == "malformed"
    assert await redis.dbsize() == 0


async def test_missing_delivery_headers_are_refused(
    client: httpx.AsyncClient, redis: ArqRedis
) -> None:
    body = b"{}"
    for header in ("X-GitHub-Event", "X-GitHub-Delivery"):
        headers = delivery_headers("issues", body)
        del headers[header]
        response = await client.post("/webhooks", content=body, headers=headers)
        assert response.status_code == 400
        assert response.json()["error"] == "missing_header"
    assert await redis.dbsize() == 0


async def test_a_30_mb_body_is_refused_before_it_is_read(
    client: httpx.AsyncClient, redis: ArqRedis
) -> None:
    body = b" " * (30 * 1024 * 1024)
    response = await client.post(
        "/webhooks", content=body, headers=delivery_headers("issues", body)
    )
    assert response.status_code == 413
    assert response.json()["error"] == "too_large"
    assert await redis.dbsize() == 0


async def test_a_streamed_body_is_counted_and_cut_off(
    client: httpx.AsyncClient, redis: ArqRedis
) -> None:
    # No Content-Length: the body arrives chunked and must be counted as it streams.
    chunk = b" " * (1024 * 1024)
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        for _ in range(30):
            sent += 1
            yield chunk

    headers = delivery_headers("issues", b"")
    response = await client.post("/webhooks", content=chunks(), headers=headers)
    assert response.status_code == 413
    assert sent < 30  # refused once past 25 MB, not after reading it all
    assert await redis.dbsize() == 0


async def test_unknown_events_are_accepted_ignored_and_counted(
    client: httpx.AsyncClient, redis: ArqRedis
) -> None:
    body = json.dumps({"action": "created", "starred_at": None}).encode()
    before = await metric(client, 'ballet_webhook_deliveries_total{event="star",outcome="ignored"}')
    response = await client.post("/webhooks", content=body, headers=delivery_headers("star", body))
    assert response.status_code == 202
    assert response.json()["status"] == "ignored"
    assert await redis.dbsize() == 0
    after = await metric(client, 'ballet_webhook_deliveries_total{event="star",outcome="ignored"}')
    assert after == before + 1


async def test_old_and_new_secrets_both_verify_during_a_rotation(
    settings: Settings, redis: ArqRedis
) -> None:
    rotating = Settings(
        webhook_secret="new-secret", webhook_secrets=SECRET, redis_url=settings.redis_url
    )
    app = create_app(rotating)
    body = b'{"action": "opened"}'
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://b") as http,
    ):
        for secret in ("new-secret", SECRET):
            response = await http.post(
                "/webhooks", content=body, headers=delivery_headers("issues", body, secret=secret)
            )
            assert response.status_code == 202, secret
        response = await http.post(
            "/webhooks", content=body, headers=delivery_headers("issues", body, secret="retired")
        )
        assert response.status_code == 401
    assert len(await queued_ids(redis)) == 2


async def test_an_unreachable_queue_answers_503_and_keeps_no_marker(
    settings: Settings, redis: ArqRedis
) -> None:
    down = settings.model_copy(update={"redis_url": None})
    app = create_app(down, "redis://127.0.0.1:1/0")
    body = b'{"action": "opened"}'
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://b") as http,
    ):
        response = await http.post(
            "/webhooks", content=body, headers=delivery_headers("issues", body)
        )
        assert response.status_code == 503
        assert "redeliver" in response.json()["message"]
        ready = await http.get("/readyz")
        assert ready.status_code == 503


async def metric(client: httpx.AsyncClient, sample: str) -> float:
    text = (await client.get("/metrics")).text
    for line in text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[-1])
    return 0.0
