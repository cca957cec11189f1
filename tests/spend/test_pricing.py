"""A metered answer's cost is the price table's, per kind of token; an unknown model's
is unknown, never $0."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from ballet.core.metering import MeteredUsage
from ballet.core.spend import Spend
from ballet.pricing import has_price, spend_of
from genai_prices import Usage, calc_price
from genai_prices.types import TieredPrices

AT = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def per_mtok(price: Decimal | TieredPrices | None) -> Decimal:
    """A price per million tokens below its first tier (the usages here are small)."""
    if price is None:
        return Decimal(0)
    return price.base if isinstance(price, TieredPrices) else price


@pytest.mark.parametrize(
    ("provider", "table_provider", "model", "cache_write"),
    [
        ("anthropic", "anthropic", "claude-sonnet-4-5-20250929", 1_500),
        ("openai", "openai", "gpt-5.1-codex", 0),
        ("openai", "openai", "gpt-4.1-2025-04-14", 0),
        ("gemini", "google", "gemini-2.5-pro", 0),
    ],
)
def test_cost_is_the_table_s_price_of_each_kind_of_token(
    provider: str, table_provider: str, model: str, cache_write: int
) -> None:
    usage = MeteredUsage(
        model=model,
        input_tokens=12_000,
        cache_read_tokens=40_000,
        cache_write_tokens=cache_write,
        output_tokens=3_000,
    )
    # The table's prices for the model, then the sum by hand: fresh input at the input
    # price, cache reads and writes at theirs, output at the output price.
    prices = calc_price(
        Usage(input_tokens=1), model, provider_id=table_provider, genai_request_timestamp=AT
    ).model_price
    by_hand = (
        12_000 * per_mtok(prices.input_mtok)
        + 40_000 * per_mtok(prices.cache_read_mtok)
        + cache_write * per_mtok(prices.cache_write_mtok)
        + 3_000 * per_mtok(prices.output_mtok)
    ) / 1_000_000

    spend = spend_of(provider, usage, AT)

    assert spend.cost_usd > 0
    assert spend.cost_usd == pytest.approx(float(by_hand), rel=1e-9)
    assert spend == Spend(
        requests=1,
        input_tokens=12_000,
        cache_read_tokens=40_000,
        cache_write_tokens=cache_write,
        output_tokens=3_000,
        cost_usd=spend.cost_usd,
    )


def test_long_prompts_are_priced_at_the_table_s_tier() -> None:
    """Past 200k input tokens (cache reads included) Anthropic's price doubles."""
    usage = MeteredUsage(model="claude-sonnet-4-5", input_tokens=150_000, cache_read_tokens=100_000)
    table = calc_price(
        Usage(input_tokens=250_000, cache_read_tokens=100_000),
        "claude-sonnet-4-5",
        provider_id="anthropic",
        genai_request_timestamp=AT,
    )
    assert spend_of("anthropic", usage, AT).cost_usd == pytest.approx(float(table.total_price))
    short = MeteredUsage(model="claude-sonnet-4-5", input_tokens=150_000)
    assert spend_of("anthropic", usage, AT).cost_usd > 2 * spend_of("anthropic", short, AT).cost_usd


def test_an_hour_s_cache_writes_are_priced_at_their_own_price() -> None:
    model = "claude-sonnet-4-5-20250929"
    prices = calc_price(
        Usage(input_tokens=1), model, provider_id="anthropic", genai_request_timestamp=AT
    ).model_price
    assert prices.cache_write_1h_mtok is not None, "the table prices an hour's writes"
    usage = MeteredUsage(model=model, cache_write_tokens=1_000, cache_write_1h_tokens=400)
    by_hand = (
        600 * per_mtok(prices.cache_write_mtok) + 400 * per_mtok(prices.cache_write_1h_mtok)
    ) / 1_000_000
    assert spend_of("anthropic", usage, AT).cost_usd == pytest.approx(float(by_hand), rel=1e-9)
    five_minutes = usage.model_copy(update={"cache_write_1h_tokens": 0})
    assert (
        spend_of("anthropic", usage, AT).cost_usd > spend_of("anthropic", five_minutes, AT).cost_usd
    )


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "qwen2.5-coder-32b-instruct"),  # a local model server's
        ("anthropic", "sonnet"),  # an alias, not a model
        ("openai", None),  # the answer named no model, nor the request
        ("mistral", "codestral-latest"),  # not a provider of the gateway
    ],
)
def test_an_unknown_model_is_counted_in_tokens_and_unpriced(
    provider: str, model: str | None
) -> None:
    usage = MeteredUsage(model=model, input_tokens=500, output_tokens=20)
    spend = spend_of(provider, usage, AT)
    assert spend == Spend(requests=1, input_tokens=500, output_tokens=20, unpriced_requests=1)
    assert spend.price_unknown


def test_gemini_s_models_prefix_is_the_same_model() -> None:
    usage = MeteredUsage(model="gemini-2.5-flash", input_tokens=1_000, output_tokens=100)
    prefixed = usage.model_copy(update={"model": "models/gemini-2.5-flash"})
    assert spend_of("gemini", prefixed, AT) == spend_of("gemini", usage, AT)
    assert spend_of("gemini", usage, AT).cost_usd > 0


def test_has_price() -> None:
    assert has_price("anthropic", "claude-sonnet-4-5-20250929")
    assert has_price("openai", "gpt-5.1-codex")
    assert has_price("gemini", "gemini-2.5-pro")
    assert not has_price("openai", "qwen2.5-coder-32b-instruct")
    assert not has_price("anthropic", "sonnet")
    assert not has_price("elsewhere", "gpt-5")
