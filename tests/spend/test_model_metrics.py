"""The gateway's meter in Prometheus: tokens by kind, cost, and answers priced or not."""

from __future__ import annotations

from ballet import metrics
from ballet.core.spend import Spend
from prometheus_client import REGISTRY


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_model_spend_is_counted_by_provider_model_and_kind() -> None:
    model = "claude-sonnet-4-5-20250929"
    kinds = ("input", "cache_read", "cache_write", "output")

    def figures() -> list[float]:
        tokens = [
            sample("ballet_model_tokens_total", provider="anthropic", model=model, kind=kind)
            for kind in kinds
        ]
        return [
            *tokens,
            sample("ballet_model_cost_usd_total", provider="anthropic", model=model),
            sample("ballet_model_requests_total", provider="anthropic", model=model, priced="true"),
            sample(
                "ballet_model_requests_total", provider="anthropic", model=model, priced="false"
            ),
        ]

    before = figures()
    metrics.model_spend_observed(
        "anthropic",
        model,
        Spend(
            requests=3,
            input_tokens=10,
            cache_read_tokens=200,
            cache_write_tokens=30,
            output_tokens=4,
            cost_usd=0.25,
            unpriced_requests=1,
        ),
    )
    after = figures()
    assert [a - b for a, b in zip(after, before, strict=True)] == [10, 200, 30, 4, 0.25, 2, 1]


def test_model_labels_are_bounded() -> None:
    assert metrics.model_label(None) == "unknown"
    room = metrics.MAX_MODEL_LABELS - len(metrics._model_labels)  # others seen some
    seen = [f"bounded-test-model-{i}" for i in range(room + 3)]
    labels = [metrics.model_label(model) for model in seen]
    assert labels == seen[:room] + ["other"] * 3
    assert metrics.model_label(seen[0]) == (seen[0] if room else "other")
    before = sample("ballet_model_requests_total", provider="openai", model="other", priced="false")
    metrics.model_spend_observed(
        "openai", "yet-another-model", Spend(requests=1, unpriced_requests=1)
    )
    after = sample("ballet_model_requests_total", provider="openai", model="other", priced="false")
    assert after - before == 1
