"""JSON answers for the errors Starlette raises itself (404, 405, 500)."""

from __future__ import annotations

import structlog
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from ballet.web.responses import problem

log = structlog.get_logger("ballet.web")


ENDPOINTS = "Ballet serves POST /webhooks, GET /healthz, GET /readyz and GET /metrics"
INTERNAL_ERROR = (
    "Ballet failed on this request (its log says why); GitHub shows the delivery as failed"
    " and it can be redelivered"
)


async def http_error(request: Request, exc: Exception) -> Response:
    status_code = exc.status_code if isinstance(exc, HTTPException) else 400
    detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
    return problem(status_code, "http", f"{detail}: {ENDPOINTS}")


async def internal_error(request: Request, exc: Exception) -> Response:
    log.exception("request failed", path=request.url.path)
    return problem(500, "internal", INTERNAL_ERROR)
