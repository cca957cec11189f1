"""What the web app's handlers share, created by its lifespan (never a global)."""

from __future__ import annotations

from dataclasses import dataclass

from arq.connections import ArqRedis
from starlette.requests import Request

from ballet.web.group_commit import GroupCommit


class BodyBudget:
    """Bytes of webhook bodies being read at once, across every connection. A body
    must be read whole before its signature can be checked, so a stranger with a
    well-formed but wrong signature header costs its size until then: together such
    bodies may hold no more than `limit`, beyond which a delivery is refused (503)
    and asked for again from GitHub by the redelivery sweep."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0

    def take(self, size: int) -> bool:
        # A body alone always fits: one within the size limit is never refused here.
        if self.taken and self.taken + size > self.limit:
            return False
        self.taken += size
        return True

    def give_back(self, size: int) -> None:
        self.taken -= size


@dataclass(frozen=True)
class WebState:
    redis: ArqRedis
    deliveries: GroupCommit  # enqueues into a DeliveryQueue, concurrent deliveries together
    secret_keys: tuple[bytes, ...]  # the webhook secrets, as HMAC keys
    max_body_bytes: int
    bodies: BodyBudget  # twice max_body_bytes: what unverified bodies may hold at once


def web_state(request: Request) -> WebState:
    state: WebState = request.app.state.ballet
    return state
