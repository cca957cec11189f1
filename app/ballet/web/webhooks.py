"""`POST /webhooks`: verify, dedupe, enqueue, answer 202 — without calling GitHub.

Checks run cheapest-refusal first: size, signature (nothing about the
request is trusted before it), headers, JSON. Only a verified, well-formed
delivery of an event Ballet handles reaches the queue.
"""

from __future__ import annotations

import json
import re
import time

import structlog
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import JSONResponse

from ballet import metrics
from ballet.github.translate import HANDLED_EVENTS
from ballet.queue import DeliveryJob
from ballet.web.body import BadContentLength, BodyTooLarge, read_limited
from ballet.web.responses import problem, status
from ballet.web.signature import signature_valid
from ballet.web.state import web_state

log = structlog.get_logger("ballet.web")

# GitHub's delivery ids are GUIDs; anything key-safe and short is accepted.
DELIVERY_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
EVENT_NAME = re.compile(r"^[a-z_]{1,64}$")


def _refuse(status_code: int, reason: str, message: str) -> JSONResponse:
    metrics.WEBHOOK_REJECTED.labels(reason).inc()
    return problem(status_code, reason, message)


async def receive_webhook(request: Request) -> JSONResponse:
    state = web_state(request)
    try:
        body = await read_limited(request, state.max_body_bytes)
    except BodyTooLarge:
        return _refuse(
            413,
            "too_large",
            f"bodies over {state.max_body_bytes} bytes are refused: GitHub sends at most 25 MB;"
            " raise BALLET_MAX_WEBHOOK_BYTES only for a sender you trust",
        )
    except BadContentLength:
        return _refuse(
            400,
            "malformed",
            "the Content-Length header is not a number:"
            " send the body's length in bytes, or omit it",
        )

    if not signature_valid(state.secrets, body, request.headers.get("x-hub-signature-256")):
        return _refuse(
            401,
            "signature",
            "missing or wrong X-Hub-Signature-256: check that the App's webhook secret"
            " matches BALLET_WEBHOOK_SECRET",
        )

    event = request.headers.get("x-github-event", "")
    delivery_id = request.headers.get("x-github-delivery", "")
    if not EVENT_NAME.match(event) or not DELIVERY_ID.match(delivery_id):
        return _refuse(
            400,
            "missing_header",
            "X-GitHub-Event and X-GitHub-Delivery must name the event and the delivery:"
            " only GitHub's webhook deliveries (which carry both) are accepted here",
        )

    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        payload = None
    if not isinstance(payload, dict):
        return _refuse(
            400,
            "malformed",
            "the body is not a JSON object: set the App's webhook content type to application/json",
        )

    if event == "ping":
        metrics.WEBHOOK_DELIVERIES.labels(event, "ping").inc()
        return status(200, "pong")
    if event not in HANDLED_EVENTS:
        metrics.WEBHOOK_DELIVERIES.labels(event, "ignored").inc()
        return status(202, "ignored", reason=f"Ballet does not handle {event} events")

    job = DeliveryJob(delivery_id=delivery_id, event=event, body=body, received_at=time.time())
    try:
        added = await state.deliveries.enqueue(job)
    except (RedisError, OSError) as exc:
        log.error("cannot enqueue delivery", delivery_id=delivery_id, error=repr(exc))
        return _refuse(
            503,
            "queue_unavailable",
            "the queue is unreachable; nothing was recorded: GitHub will show the delivery"
            " as failed, redeliver it once /readyz answers 200",
        )
    outcome = "accepted" if added else "duplicate"
    metrics.WEBHOOK_DELIVERIES.labels(event, outcome).inc()
    log.debug("delivery received", delivery_id=delivery_id, github_event=event, outcome=outcome)
    return status(202 if added else 200, outcome, delivery=delivery_id)
