"""The delivery job: a verified webhook delivery, parsed and handed to the consumer."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import structlog
from arq import Retry
from arq.worker import Function, func

from ballet import metrics
from ballet.github.payloads import parse_delivery
from ballet.jobs.retries import contention, count_failure, forget_failures
from ballet.jobs.services import Delivery, Services
from ballet.queue import HANDLE_DELIVERY, DeliveryJob

log = structlog.get_logger("ballet.worker")

MAX_DELIVERY_TRIES = 5


class LoggingConsumer:
    """The default consumer: logs each delivery (`handle_delivery` counts it)."""

    async def on_delivery(self, delivery: Delivery) -> None:
        envelope = delivery.envelope
        log.info(
            "delivery handled",
            delivery_id=delivery.id,
            github_event=delivery.event,
            action=envelope.action,
            repository=envelope.repository.full_name if envelope.repository else None,
            installation_id=envelope.installation_id,
        )


async def handle_delivery(ctx: dict[str, Any], job: DeliveryJob) -> None:
    """Load a queued delivery and hand it to the consumer; retry it on failure."""
    services: Services = ctx["services"]
    delivery_id, event = job.delivery_id, job.event
    # The web app parsed this body before enqueueing it, so it is a JSON object.
    payload = json.loads(job.body)
    delivery = Delivery(
        id=delivery_id,
        event=event,
        payload=payload,
        envelope=parse_delivery(event, payload),
        received_at=datetime.fromtimestamp(job.received_at, UTC),
    )
    try:
        await services.consumer.on_delivery(delivery)
    except Exception as exc:
        wait = contention(exc)
        if wait is not None:
            # GitHub, the installation's write pacing or the ticket says when to
            # come back: defer to then, as often as it takes; waiting is no failure.
            log.info("delivery deferred", delivery_id=delivery_id, reason=str(exc))
            raise wait from exc
        metrics.DELIVERIES_FAILED.labels(event).inc()
        failures = await count_failure(services.redis, ctx)
        if failures < MAX_DELIVERY_TRIES:
            log.warning("delivery failed, will retry", delivery_id=delivery_id, error=repr(exc))
            raise Retry(defer=services.settings.delivery_retry_seconds * failures**2) from exc
        # Given up: let a person's redelivery from GitHub's UI run it again.
        await services.deliveries.forget(delivery_id)
        await forget_failures(services.redis, ctx)
        log.error("delivery failed for good; redeliver it from GitHub", delivery_id=delivery_id)
        raise
    await forget_failures(services.redis, ctx)
    # Counted here, whatever the consumer, so swapping it keeps the metric.
    metrics.DELIVERIES_HANDLED.labels(event, delivery.envelope.action or "").inc()


# No result kept: arq's result of a delivery holds its job, the whole payload
# (~12 KB), for an hour, and nothing reads it: a redelivery is recognised by the
# delivery's own marker (queue.py), and a failure is logged and counted.
HANDLE_DELIVERY_JOB: Function = func(handle_delivery, name=HANDLE_DELIVERY, keep_result=0)
