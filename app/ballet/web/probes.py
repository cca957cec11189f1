"""Liveness, readiness and metrics endpoints."""

from __future__ import annotations

import asyncio

from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ballet.metrics import render_metrics
from ballet.web.responses import problem, status
from ballet.web.state import web_state

READY_TIMEOUT_SECONDS = 2.0


async def healthz(request: Request) -> JSONResponse:
    return status(200, "ok")


async def readyz(request: Request) -> JSONResponse:
    """Ready when the queue answers PING: only then can a delivery be kept."""
    try:
        await asyncio.wait_for(web_state(request).redis.ping(), READY_TIMEOUT_SECONDS)
    except (RedisError, OSError, TimeoutError) as exc:
        return problem(503, "queue_unavailable", f"the queue's Redis does not answer: {exc}")
    return status(200, "ready")


async def metrics(request: Request) -> Response:
    body, content_type = render_metrics()
    return Response(body, media_type=content_type)
