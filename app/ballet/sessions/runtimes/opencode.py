"""`opencode`: `opencode run --format json` with auto-approved permissions.

Without `--auto`, `run` rejects every permission ask. `--title` is given so the
CLI makes no title call of its own (a call its `step_finish` events would not
count). Its configuration comes in OPENCODE_CONFIG_CONTENT: no auto-update, no
sharing and, with `base_url`, the endpoint of the model's provider — a built-in
provider (`anthropic/…`, `openai/…`, `google/…`) gets it as `baseURL`; any other
provider name (`ballet/my-model`) becomes an OpenAI-compatible provider (Chat
Completions) with that model, keyed by OPENAI_API_KEY. Its downloads (LSP
servers, the models.dev catalogue) and auto-update are turned off.

Usage and cost are the sums over `step_finish` events' `part.tokens` (input
plus cache reads and writes; output plus reasoning) and `part.cost`.
"""

from __future__ import annotations

import json
from typing import Any

from ballet.core.report import Usage
from ballet.sessions.runtimes.base import (
    EventMeter,
    Invocation,
    RuntimeAdapter,
    RuntimeConfigError,
    UsageMeter,
    flag,
    mapping,
    number,
    tokens,
)

BUILT_IN_PROVIDERS = ("anthropic", "openai", "google")
QUIET = {
    "OPENCODE_DISABLE_AUTOUPDATE": "true",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "true",  # else installed from npm at start
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "true",
    "OPENCODE_DISABLE_MODELS_FETCH": "true",
    "OPENCODE_DISABLE_SHARE": "true",
}


class OpencodeAdapter(RuntimeAdapter):
    name = "opencode"
    executable = "opencode"

    def arguments(self, invocation: Invocation) -> list[str]:
        return [
            "run",
            "--format",
            "json",
            "--dir",
            str(invocation.workdir),
            "--auto",
            "--title",
            "Ballet session",
            *flag("-m", invocation.model),
            *flag("--variant", invocation.effort),
            "--",
            invocation.prompt,
        ]

    def environment(self, invocation: Invocation) -> dict[str, str]:
        config: dict[str, Any] = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
        }
        if invocation.base_url:
            config["provider"] = providers(invocation.model, invocation.base_url)
        return {
            **super().environment(invocation),
            **QUIET,
            "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        }

    def meter(self, invocation: Invocation) -> UsageMeter:
        return OpencodeMeter()


def providers(model: str | None, base_url: str) -> dict[str, Any]:
    provider, _, model_id = (model or "").partition("/")
    if not provider or not model_id:
        raise RuntimeConfigError(
            "an opencode runtime with `base_url` needs `model: <provider>/<model>`, "
            "e.g. `model: openai/gpt-5` or `model: local/qwen3-coder` for an "
            "OpenAI-compatible server"
        )
    if provider in BUILT_IN_PROVIDERS:
        return {provider: {"options": {"baseURL": base_url}}}
    return {
        provider: {
            "npm": "@ai-sdk/openai-compatible",
            "name": provider,
            "options": {"baseURL": base_url, "apiKey": "{env:OPENAI_API_KEY}"},
            "models": {model_id: {"name": model_id}},
        }
    }


class OpencodeMeter(EventMeter):
    event_type = "step_finish"

    def read(self, event: dict[str, Any], before: Usage) -> Usage:
        part = mapping(event.get("part"))
        counts = mapping(part.get("tokens"))
        cache = mapping(counts.get("cache"))
        return Usage(
            input_tokens=before.input_tokens
            + tokens(counts.get("input"))
            + tokens(cache.get("read"))
            + tokens(cache.get("write")),
            output_tokens=before.output_tokens
            + tokens(counts.get("output"))
            + tokens(counts.get("reasoning")),
            cost_usd=before.cost_usd + number(part.get("cost")),
        )
