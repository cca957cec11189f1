"""Reading what each answer spent, beside the bytes as they pass.

The gateway hands every chunk of an answer to the answer's meter on its way
down; nothing waits for it. The meter is the provider's own usage (core/metering.py,
`UsageReader`), priced (pricing.py). `Metering` is the seam: the worker's is
`ProviderMetering`; a test or a benchmark may give another.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from ballet.core.provider_keys import Provider
from ballet.core.spend import Spend


class AnswerMeter(Protocol):
    def feed(self, chunk: bytes) -> None: ...

    def spent(self, at: datetime) -> tuple[str | None, Spend] | None:
        """The answer's model and spend; None when it said no usage (an error)."""
        ...


class Metering(Protocol):
    def meter(
        self, provider: Provider, method: str, path: str, content_type: str, model: str | None
    ) -> AnswerMeter | None:
        """A meter for one answer; None for a request that spends nothing (a list of
        models, a token count)."""
        ...
