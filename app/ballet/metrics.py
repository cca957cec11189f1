"""Prometheus metrics of the web app and the worker, served at `GET /metrics`.

Label values are bounded: event and action names come only from signed
deliveries (GitHub's own vocabulary), and reasons/outcomes are fixed here.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, Counter, generate_latest

WEBHOOK_DELIVERIES = Counter(
    "ballet_webhook_deliveries_total",
    "Signed webhook deliveries answered, by event and outcome"
    " (accepted, duplicate, ignored, ping).",
    ["event", "outcome"],
)
WEBHOOK_REJECTED = Counter(
    "ballet_webhook_rejected_total",
    "Webhook requests refused, by reason"
    " (signature, too_large, malformed, missing_header, queue_unavailable).",
    ["reason"],
)
DELIVERIES_HANDLED = Counter(
    "ballet_deliveries_handled_total",
    "Deliveries a worker handed to its consumer, by event and action.",
    ["event", "action"],
)
DELIVERIES_FAILED = Counter(
    "ballet_deliveries_failed_total",
    "Deliveries whose handling raised, by event (retried until the last try).",
    ["event"],
)


def render_metrics() -> tuple[bytes, str]:
    """The exposition text of every metric, and its content type."""
    return generate_latest(), CONTENT_TYPE_LATEST
