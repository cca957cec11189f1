"""A real consumer for the queue area's tests: it records what it is handed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from arq.connections import ArqRedis
from ballet.jobs.services import Delivery, Services
from ballet.settings import Settings
from ballet.wiring import services_for


class RecordingConsumer:
    """Records every delivery; fails the first `failures` times it is called."""

    def __init__(self, failures: int = 0, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0
        self.handled: list[Delivery] = []

    async def on_delivery(self, delivery: Delivery) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error or RuntimeError(f"consumer failure {self.calls}")
        self.handled.append(delivery)


def services_with(
    consumer: RecordingConsumer,
) -> Callable[[Settings, ArqRedis], Awaitable[Services]]:
    """A worker's services factory that hands every delivery to `consumer`."""

    async def factory(settings: Settings, redis: ArqRedis) -> Services:
        return services_for(settings, redis, consumer)

    return factory
