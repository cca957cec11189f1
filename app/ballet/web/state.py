"""What the web app's handlers share, created by its lifespan (never a global)."""

from __future__ import annotations

from dataclasses import dataclass

from arq.connections import ArqRedis
from starlette.requests import Request

from ballet.queue import DeliveryQueue


@dataclass(frozen=True)
class WebState:
    redis: ArqRedis
    deliveries: DeliveryQueue
    secrets: tuple[str, ...]
    max_body_bytes: int


def web_state(request: Request) -> WebState:
    state: WebState = request.app.state.ballet
    return state
