"""What the web app's handlers share, created by its lifespan (never a global)."""

from __future__ import annotations

from dataclasses import dataclass

from arq.connections import ArqRedis
from starlette.requests import Request

from ballet.web.group_commit import GroupCommit


@dataclass(frozen=True)
class WebState:
    redis: ArqRedis
    deliveries: GroupCommit  # enqueues into a DeliveryQueue, concurrent deliveries together
    secret_keys: tuple[bytes, ...]  # the webhook secrets, as HMAC keys
    max_body_bytes: int


def web_state(request: Request) -> WebState:
    state: WebState = request.app.state.ballet
    return state
