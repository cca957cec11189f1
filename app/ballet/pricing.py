"""What a metered answer cost, from a maintained price table (pydantic's genai-prices).

Prices are the table's for the day the answer came (`at`): providers change
them, and the table keeps their history. Cache reads and writes are priced
as the table prices them for the model (an hour's writes at their own price
where it has one; a model without a cache-write price has its writes priced
as input). A model the table does not know is counted
in tokens and marked unpriced: its cost is unknown, never $0.

The bundled table is used as installed; nothing is fetched at run time
(genai-prices can update itself over the network: Ballet never asks it to).
Not in `ballet.core`: genai-prices imports asyncio.
"""

from __future__ import annotations

from datetime import UTC, datetime

from genai_prices import Usage, calc_price

from ballet.core.metering import MeteredUsage
from ballet.core.spend import Spend

# The gateway's provider names, as the price table names the providers.
PRICE_PROVIDERS = {"anthropic": "anthropic", "openai": "openai", "gemini": "google"}


def spend_of(provider: str, usage: MeteredUsage, at: datetime) -> Spend:
    """One answer's spend: its tokens, and their cost if the model has a known price."""
    tokens = Spend(
        requests=1,
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )
    cost = _cost(provider, usage, at)
    if cost is None:
        return tokens.model_copy(update={"unpriced_requests": 1})
    return tokens.model_copy(update={"cost_usd": cost})


def has_price(provider: str, model: str) -> bool:
    """The table knows a price for `model` of `provider` today."""
    empty = MeteredUsage(model=model)
    return _cost(provider, empty, datetime.now(UTC)) is not None


def _cost(provider: str, usage: MeteredUsage, at: datetime) -> float | None:
    price_provider = PRICE_PROVIDERS.get(provider)
    model = usage.model.removeprefix("models/") if usage.model else None  # Gemini's spelling
    if price_provider is None or not model:
        return None
    # The table counts input whole: cache reads and writes are parts of it.
    priced = Usage(
        input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_write_1h_tokens=usage.cache_write_1h_tokens,
        output_tokens=usage.output_tokens,
    )
    when = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    try:
        price = calc_price(priced, model, provider_id=price_provider, genai_request_timestamp=when)
    except (LookupError, ValueError):  # no such model; usage the table cannot price
        return None
    return float(price.total_price)
