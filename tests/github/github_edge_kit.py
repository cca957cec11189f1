"""The GitHub edge's own test helpers: a launcher that records, and a webhook delivery."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ballet.core.effects import CancelSession, StartSession

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@dataclass
class RecordingLauncher:
    launched: list[StartSession] = field(default_factory=list)
    cancelled: list[CancelSession] = field(default_factory=list)

    async def launch(self, effect: StartSession) -> None:
        self.launched.append(effect)

    async def cancel(self, effect: CancelSession) -> None:
        self.cancelled.append(effect)


@dataclass(frozen=True)
class Delivery:
    id: str
    event: str
    payload: dict[str, Any]
    received_at: datetime = NOW
