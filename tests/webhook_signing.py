"""Signing webhook deliveries the way GitHub does, for every area that posts them."""

from __future__ import annotations

import hashlib
import hmac
import itertools

SECRET = "web-test-secret"
_ids = itertools.count(1)


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def delivery_headers(
    event: str, body: bytes, delivery_id: str | None = None, secret: str = SECRET
) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or f"delivery-{next(_ids)}",
        "X-Hub-Signature-256": sign(body, secret),
        "Content-Type": "application/json",
    }
