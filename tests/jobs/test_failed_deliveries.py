"""Which failed webhook deliveries to ask GitHub for again (GitHub's recipe, decided purely)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ballet.github.models import HookDelivery
from ballet.jobs.redelivery import undelivered

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def attempt(id: int, guid: str, minutes_ago: float, status: int) -> HookDelivery:
    return HookDelivery(
        id=id, guid=guid, delivered_at=NOW - timedelta(minutes=minutes_ago), status_code=status
    )


def test_only_deliveries_none_of_whose_attempts_arrived_are_asked_for_once_each() -> None:
    attempts = [
        attempt(1, "lost", 10, 0),  # never connected
        attempt(2, "lost", 5, 502),  # a redelivery that failed too: the latest is asked for
        attempt(3, "fine", 9, 202),
        attempt(4, "late", 8, 503),
        attempt(5, "late", 7, 202),  # a later attempt arrived: nothing to do
        attempt(6, "settling", 0.2, 0),  # its first try may still be on its way
    ]
    assert [(a.id, a.guid) for a in undelivered(attempts, NOW)] == [(2, "lost")]


def test_a_dozen_failures_are_asked_for_oldest_first() -> None:
    attempts = [attempt(n, f"g{n}", 30 - n, 0) for n in range(12)]
    assert [a.id for a in undelivered(attempts, NOW)] == list(range(12))
