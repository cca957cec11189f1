"""Signed webhook deliveries to the App, one at a time and in order, with a delivery log.

Changes enqueue their payload at once (so the order is the order of the
changes); a single task posts them. A failed post is logged, not retried, as
GitHub does; `redeliver` posts a logged delivery again under the same GUID.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import structlog

log = structlog.get_logger(__name__)
HOOK_ID = 424242
USER_AGENT = "GitHub-Hookshot/sandbox"
ALWAYS_SENT = frozenset({"installation", "installation_repositories", "ping"})


@dataclass
class Delivery:
    id: int
    guid: str
    event: str
    action: str | None
    body: bytes
    delivered_at: datetime | None = None
    status_code: int | None = None
    error: str | None = None
    redelivery: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "guid": self.guid,
            "event": self.event,
            "action": self.action,
            "status_code": self.status_code,
            "error": self.error,
            "redelivery": self.redelivery,
            "delivered_at": self.delivered_at.isoformat() if self.delivered_at else None,
        }


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class WebhookQueue:
    url: str | None
    secret: str
    app_id: int
    # The events the App subscribed to (set by the manifest flow); None: every event.
    events: frozenset[str] | None = None
    # Deliveries posted at once. GitHub posts several at a time, in no promised order;
    # 1 keeps the order they were made in (what most tests read), more keeps up with
    # thousands of tickets when each post waits on a busy sandbox.
    posting_at_once: int = 1
    log: list[Delivery] = field(default_factory=list)
    _queue: asyncio.Queue[Delivery] = field(default_factory=asyncio.Queue)
    _next_id: int = 1

    def send(self, event: str, payload: dict[str, Any]) -> Delivery:
        """Log and queue a delivery; returns at once."""
        action = payload.get("action")
        delivery = Delivery(
            self._next_id if self.subscribed(event) else 0,  # 0: never sent, never logged
            str(uuid.uuid4()),
            event,
            action if isinstance(action, str) else None,
            json.dumps(payload).encode(),
        )
        if not delivery.id:
            delivery.error = f"not sent: the App is not subscribed to {event} events"
            return delivery
        self._next_id += 1
        self.log.append(delivery)
        self._queue.put_nowait(delivery)
        return delivery

    def subscribed(self, event: str) -> bool:
        # GitHub sends an App its own installation events whatever it subscribed to.
        return self.events is None or event in self.events or event in ALWAYS_SENT

    def get(self, delivery_id: int) -> Delivery | None:
        return next((d for d in self.log if d.id == delivery_id), None)

    def redeliver(self, delivery_id: int) -> Delivery | None:
        original = self.get(delivery_id)
        if original is None:
            return None
        again = Delivery(
            self._next_id,
            original.guid,
            original.event,
            original.action,
            original.body,
            redelivery=True,
        )
        self._next_id += 1
        self.log.append(again)
        self._queue.put_nowait(again)
        return again

    def waiting(self) -> int:
        """Deliveries made and not yet posted."""
        return self._queue.qsize()

    async def idle(self) -> None:
        """Wait until every queued delivery has been posted (for tests and the demo)."""
        await self._queue.join()

    async def run(self) -> None:
        # A connection of its own for each post, as GitHub's: a kept-alive one the
        # receiver closes as it idles (uvicorn: after 5 s) while a busy sandbox is still
        # about to post on it fails with a ReadError, and the delivery is lost.
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            posters = [self._posting(client) for _ in range(max(1, self.posting_at_once))]
            await asyncio.gather(*posters)

    async def _posting(self, client: httpx.AsyncClient) -> None:
        while True:
            delivery = await self._queue.get()
            try:
                await self._post(client, delivery)
            except Exception as exc:  # one broken delivery must not stop the queue
                delivery.error = f"{type(exc).__name__}: {exc}"
                log.exception("webhook delivery crashed", delivery=delivery.id)
            finally:
                self._queue.task_done()

    async def _post(self, client: httpx.AsyncClient, delivery: Delivery) -> None:
        delivery.delivered_at = datetime.now(UTC)
        if self.url is None:
            delivery.error = "no --webhook-url configured"
            return
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-GitHub-Event": delivery.event,
            "X-GitHub-Delivery": delivery.guid,
            "X-GitHub-Hook-ID": str(HOOK_ID),
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": str(self.app_id),
            "X-Hub-Signature-256": signature(self.secret, delivery.body),
        }
        try:
            response = await client.post(self.url, content=delivery.body, headers=headers)
        except httpx.HTTPError as exc:
            delivery.error = f"{type(exc).__name__}: {exc}"
            log.warning("webhook delivery failed", delivery=delivery.id, error=delivery.error)
            return
        delivery.status_code = response.status_code
        log.info(
            "webhook delivered",
            delivery=delivery.id,
            hook_event=delivery.event,
            action=delivery.action,
            status=response.status_code,
        )
