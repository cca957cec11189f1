"""GitHub's App webhook delivery API: `GET /app/hook/deliveries` and redelivery.

GitHub never retries a delivery the App failed to take; the App may list
its recent deliveries (newest first, paged by cursor through the `Link`
header) and ask for one again (`POST /app/hook/deliveries/{id}/attempts`,
202). Both need the App's JWT. A delivery that never connected has status
code 0, as on GitHub.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ballet.sandbox.errors import ApiError, not_found
from ballet.sandbox.handler import actor_of, int_param, respond, sandbox_of
from ballet.sandbox.webhooks import Delivery


def _require_jwt(request: Request) -> None:
    if actor_of(request).kind != "app":
        raise ApiError(
            401, "A JSON web token could not be decoded: this endpoint needs the App's JWT"
        )


def _status(delivery: Delivery) -> str:
    if delivery.status_code is None:
        return "pending" if delivery.error is None else "failed to connect to host"
    if 200 <= delivery.status_code < 300:
        return "OK"
    return f"Invalid HTTP Response: {delivery.status_code}"


def item(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.id,
        "guid": delivery.guid,
        "delivered_at": delivery.delivered_at.isoformat() if delivery.delivered_at else None,
        "redelivery": delivery.redelivery,
        "duration": 0.01,
        "status": _status(delivery),
        "status_code": delivery.status_code or 0,
        "event": delivery.event,
        "action": delivery.action,
        "installation_id": None,
        "repository_id": None,
    }


async def list_hook_deliveries(request: Request) -> JSONResponse:
    _require_jwt(request)
    params = request.query_params
    per_page = min(max(int(params.get("per_page", "30")), 1), 100)
    cursor = int(params["cursor"]) if params.get("cursor", "").isdigit() else None
    sent = [d for d in reversed(sandbox_of(request).hooks.log) if d.delivered_at is not None]
    if cursor is not None:
        sent = [d for d in sent if d.id <= cursor]
    wanted = params.get("status")
    if wanted in ("success", "failure"):
        sent = [d for d in sent if (_status(d) == "OK") == (wanted == "success")]
    page, rest = sent[:per_page], sent[per_page:]
    response = respond([item(d) for d in page])
    if rest:
        following = request.url.include_query_params(cursor=rest[0].id)
        response.headers["link"] = f'<{following}>; rel="next"'
    return response


async def redeliver_attempt(request: Request) -> JSONResponse:
    _require_jwt(request)
    again = sandbox_of(request).hooks.redeliver(int_param(request, "delivery_id"))
    if again is None:
        raise not_found()
    return respond({}, 202)


ROUTES = [
    Route("/app/hook/deliveries", list_hook_deliveries),
    Route("/app/hook/deliveries/{delivery_id}/attempts", redeliver_attempt, methods=["POST"]),
]
