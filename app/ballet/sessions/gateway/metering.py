"""Reading what each answer spent, beside the bytes as they pass.

The gateway hands every chunk of an answer to the answer's meter on its way
down; nothing waits for it. The meter is the provider's own usage (core/metering.py,
`UsageReader`), priced (pricing.py). `Metering` is the seam: the worker's is
`ProviderMetering`; a test or a benchmark may give another.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from ballet.core.metering import Api, UsageReader
from ballet.core.provider_keys import Provider
from ballet.core.spend import Spend
from ballet.core.sse_events import Piece
from ballet.pricing import spend_of
from ballet.sessions.gateway.needle import FIND_USAGE


class AnswerMeter(Protocol):
    def feed(self, chunk: Piece, needle_absent: bool = False) -> None:
        """`needle_absent`: the caller found no `usage` in a span holding all of `chunk`."""
        ...

    def spent(self, at: datetime) -> tuple[str | None, Spend] | None:
        """The answer's model and spend; None when it said no usage (an error)."""
        ...


class Metering(Protocol):
    def meter(
        self, provider: Provider, api: Api, content_type: str, model: str | None
    ) -> AnswerMeter | None:
        """A meter for one answer of a metered call (`api`, as the gateway found it: a
        request that spends nothing is not metered). None: the answer is not metered."""
        ...


class ProviderMetering:
    """The provider's usage fields, read as the answer streams, priced by genai-prices."""

    def meter(
        self, provider: Provider, api: Api, content_type: str, model: str | None
    ) -> AnswerMeter | None:
        return ReaderMeter(provider, UsageReader(api, content_type, model, find=FIND_USAGE))


class ReaderMeter:
    def __init__(self, provider: Provider, reader: UsageReader) -> None:
        self._provider = provider
        self._reader = reader

    def feed(self, chunk: Piece, needle_absent: bool = False) -> None:
        self._reader.feed(chunk, needle_absent)

    def spent(self, at: datetime) -> tuple[str | None, Spend] | None:
        usage = self._reader.result()
        if usage is None:
            return None
        return usage.model, spend_of(self._provider, usage, at)
