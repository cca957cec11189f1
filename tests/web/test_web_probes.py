"""Health, readiness and metrics endpoints."""

from __future__ import annotations

import httpx
import pytest
from ballet.settings import Settings
from ballet.web import create_app

pytestmark = pytest.mark.anyio


async def test_healthz_and_readyz_answer_when_the_queue_is_up(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready"}


async def test_readyz_is_503_while_the_queue_is_unreachable(settings: Settings) -> None:
    app = create_app(settings, "redis://127.0.0.1:1/0")
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://b") as http,
    ):
        assert (await http.get("/healthz")).status_code == 200
        ready = await http.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["error"] == "queue_unavailable"


async def test_metrics_are_served_in_prometheus_format(client: httpx.AsyncClient) -> None:
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert "# TYPE ballet_webhook_deliveries_total counter" in response.text


async def test_wrong_paths_and_methods_get_json_errors(client: httpx.AsyncClient) -> None:
    wrong_method = await client.get("/webhooks")
    assert wrong_method.status_code == 405
    assert "POST /webhooks" in wrong_method.json()["message"]
    unknown = await client.post("/webhook")
    assert unknown.status_code == 404
    assert unknown.json()["error"] == "http"
