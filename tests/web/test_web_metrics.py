"""`GET /metrics` exposes every metric an operator alerts on, in Prometheus' text format."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.anyio

# Metric family names as the parser reports them (counters without `_total`).
EXPECTED = {
    "ballet_webhook_deliveries": "counter",
    "ballet_webhook_rejected": "counter",
    "ballet_deliveries_handled": "counter",
    "ballet_deliveries_failed": "counter",
    "ballet_ticket_events": "counter",
    "ballet_tickets_ended": "counter",
    "ballet_sessions": "counter",
    "ballet_session_seconds": "histogram",
    "ballet_sessions_running": "gauge",
    "ballet_github_requests": "counter",
    "ballet_github_rate_limited": "counter",
    "ballet_reconciler_crashed_sessions": "counter",
    "ballet_live_tickets": "gauge",
}


async def test_metrics_exposes_every_ballet_metric_with_its_type_and_help(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain;")
    families = {
        f.name: f for f in text_string_to_metric_families(response.text) if f.name in EXPECTED
    }
    assert {name: f.type for name, f in families.items()} == EXPECTED
    assert all(f.documentation for f in families.values())


async def test_series_worth_alerting_on_exist_at_zero_before_anything_happens(
    client: httpx.AsyncClient,
) -> None:
    text = (await client.get("/metrics")).text
    samples = {
        (s.name, tuple(sorted(s.labels.items())))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }

    for kind in ("primary", "secondary"):
        assert ("ballet_github_rate_limited_total", (("kind", kind),)) in samples
    for status in ("done", "failed", "cancelled"):
        assert ("ballet_tickets_ended_total", (("status", status),)) in samples
    assert ("ballet_reconciler_crashed_sessions_total", ()) in samples
    assert ("ballet_sessions_running", (("adapter", "claude-code"),)) in samples
