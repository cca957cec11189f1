"""`POST /webhooks`: verify, dedupe, enqueue, answer 202 — without calling GitHub.

Checks run cheapest-refusal first: size, signature (nothing about the
request is trusted before it), headers, JSON. A request without a signature
header of the right form, or declaring a body over the limit, is answered
before a byte of its body is read, and its connection closed: a stranger's
upload costs the web process nothing (docs/security.md, Public endpoints).
Only a verified, well-formed delivery of an event Ballet handles reaches the
queue, and it is answered only once its job is in Redis.

This is the one hot path of the web app, so it is a plain ASGI endpoint: it
reads the four headers it needs from the raw header list and answers with
prebuilt header lists, without Starlette's request and response objects or
its middleware (docs/performance.md says what each of those cost). The app
routes POST /webhooks here directly (`ballet.web.app.BalletApp`); every
other request goes through Starlette as before.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping

import orjson
import structlog
from redis.exceptions import RedisError
from starlette.types import Receive, Scope, Send

from ballet import metrics
from ballet.github.translate import HANDLED_EVENTS
from ballet.queue import DeliveryJob
from ballet.web.errors import INTERNAL_ERROR
from ballet.web.signature import signature_valid
from ballet.web.state import WebState

log = structlog.get_logger("ballet.web")
# Checked before building a debug event: structlog would build and drop one
# per delivery, a measurable share of the request at webhook rates.
_stdlib_log = logging.getLogger("ballet.web")

# GitHub's delivery ids are GUIDs; anything key-safe and short is accepted.
DELIVERY_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
EVENT_NAME = re.compile(r"^[a-z_]{1,64}$")

_WANTED = frozenset(
    {b"content-length", b"x-hub-signature-256", b"x-github-event", b"x-github-delivery"}
)
_JSON = (b"content-type", b"application/json")
_CLOSE = (b"connection", b"close")
# `sha256=` and 64 hex digits: anything else cannot verify, so its body is not read.
SIGNATURE_LENGTH = len("sha256=") + 64


class _Refused(Exception):
    """The body grew past the size limit while it was read."""


class _Disconnected(Exception):
    """The client went away before its body was whole: nobody to answer."""


async def answer(
    send: Send, status_code: int, content: Mapping[str, str], *, close: bool = False
) -> None:
    """The JSON answer; `close` ends the connection, as after a body left unread."""
    body = orjson.dumps(content)
    headers = [(b"content-length", str(len(body)).encode()), _JSON]
    if close:
        headers.append(_CLOSE)
    await send({"type": "http.response.start", "status": status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


Answer = tuple[int, dict[str, str]]


class _Unread(Exception):
    """Refused before its body was read: answered, then the connection closed."""

    def __init__(self, refused: Answer) -> None:
        self.refused = refused


def refusal(status_code: int, reason: str, message: str) -> Answer:
    metrics.WEBHOOK_REJECTED.labels(reason).inc()
    return status_code, {"error": reason, "message": message}


def too_large(limit: int) -> str:
    return (
        f"bodies over {limit} bytes are refused: GitHub sends at most 25 MB;"
        " raise BALLET_MAX_WEBHOOK_BYTES only for a sender you trust"
    )


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole body, counted as it streams: a chunked or lying body is
    refused as soon as it passes `limit`, never held whole."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _Refused
        chunks.append(chunk)
        more = message.get("more_body", False)
    # The usual case is one message: its bytes as they are, no copy.
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def receive_webhook(state: WebState, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer one delivery; any unexpected error is logged and answered 500."""
    close = False
    try:
        status_code, content = await _decide(state, scope, receive)
    except _Disconnected:
        return
    except _Unread as unread:
        (status_code, content), close = unread.refused, True
    except Exception:
        log.exception("request failed", path=scope.get("path"))
        status_code, content = 500, {"error": "internal", "message": INTERNAL_ERROR}
    await answer(send, status_code, content, close=close)


def _unsigned() -> Answer:
    return refusal(
        401,
        "signature",
        "missing or wrong X-Hub-Signature-256: check that the App's webhook secret"
        " matches BALLET_WEBHOOK_SECRET",
    )


async def _decide(state: WebState, scope: Scope, receive: Receive) -> Answer:
    found: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        # The first of repeated headers wins, as with Starlette's Headers.get.
        if name in _WANTED and name not in found:
            found[name] = value

    limit = state.max_body_bytes
    declared = found.get(b"content-length")
    if declared is not None:
        if not declared.isdigit():
            raise _Unread(
                refusal(
                    400,
                    "malformed",
                    "the Content-Length header is not a number:"
                    " send the body's length in bytes, or omit it",
                )
            )
        # Refused before reading a byte of it.
        if int(declared) > limit:
            raise _Unread(refusal(413, "too_large", too_large(limit)))
    signature = found.get(b"x-hub-signature-256")
    if signature is None or len(signature) != SIGNATURE_LENGTH:
        raise _Unread(_unsigned())
    # Held whole before it can be checked: what unchecked bodies hold together is bounded.
    reserved = int(declared) if declared is not None else limit
    if not state.bodies.take(reserved):
        raise _Unread(
            refusal(
                503,
                "busy",
                "Ballet is reading as many webhook bodies as it holds at once (twice"
                " BALLET_MAX_WEBHOOK_BYTES): GitHub shows this delivery as failed and"
                " Ballet's redelivery sweep asks for it again",
            )
        )
    try:
        body = await read_body(receive, limit)
    except _Refused:
        raise _Unread(refusal(413, "too_large", too_large(limit))) from None
    finally:
        state.bodies.give_back(reserved)

    if not signature_valid(state.secret_keys, body, signature):
        return _unsigned()

    event = found.get(b"x-github-event", b"").decode("latin-1")
    delivery_id = found.get(b"x-github-delivery", b"").decode("latin-1")
    if not EVENT_NAME.match(event) or not DELIVERY_ID.match(delivery_id):
        return refusal(
            400,
            "missing_header",
            "X-GitHub-Event and X-GitHub-Delivery must name the event and the delivery:"
            " only GitHub's webhook deliveries (which carry both) are accepted here",
        )

    try:
        # orjson: the stdlib's json took a tenth of a delivery's time
        # (docs/performance.md); it refuses bad UTF-8 as well.
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict):
        return refusal(
            400,
            "malformed",
            "the body is not a JSON object: set the App's webhook content type to application/json",
        )

    if event == "ping":
        metrics.WEBHOOK_DELIVERIES.labels(event, "ping").inc()
        return 200, {"status": "pong"}
    if event not in HANDLED_EVENTS:
        metrics.WEBHOOK_DELIVERIES.labels(event, "ignored").inc()
        return 202, {"status": "ignored", "reason": f"Ballet does not handle {event} events"}

    job = DeliveryJob(delivery_id=delivery_id, event=event, body=body, received_at=time.time())
    try:
        added = await state.deliveries.enqueue(job)
    except (RedisError, OSError) as exc:
        log.error("cannot enqueue delivery", delivery_id=delivery_id, error=repr(exc))
        return refusal(
            503,
            "queue_unavailable",
            "the queue is unreachable; nothing was recorded: GitHub will show the delivery"
            " as failed, redeliver it once /readyz answers 200",
        )
    outcome = "accepted" if added else "duplicate"
    metrics.WEBHOOK_DELIVERIES.labels(event, outcome).inc()
    if _stdlib_log.isEnabledFor(logging.DEBUG):
        log.debug("delivery received", delivery_id=delivery_id, github_event=event, outcome=outcome)
    return 202 if added else 200, {"status": outcome, "delivery": delivery_id}
