"""`opencode`: `opencode run --format json` with auto-approved permissions.

Without `--auto`, `run` rejects every permission ask. `--title` is given so the
CLI makes no title call of its own (a call its `step_finish` events would not
count). Its configuration comes in OPENCODE_CONFIG_CONTENT: no auto-update, no
sharing and, with Ballet's model gateway (the runtime holds provider keys) or
`base_url`, the endpoint of the model's provider — a built-in
provider (`anthropic/…`, `openai/…`, `google/…`) gets it as `baseURL`; any other
provider name (`ballet/my-model`) becomes an OpenAI-compatible provider (Chat
Completions) with that model, keyed by OPENAI_API_KEY. Its downloads (LSP
servers, the models.dev catalogue) and auto-update are turned off.

A runtime may declare OPENCODE_CONFIG_CONTENT itself (opencode's own way to be
configured): Ballet merges the two, as opencode merges its config sources
(objects key by key, any other value replaced). Ballet's custom-provider
defaults yield to the declared keys; what Ballet needs — no auto-update, no
sharing, the `baseURL` its egress proxy lets through — is laid over them. Its
permissions need no keys: `run --auto` approves every ask that is not denied,
and `run` itself denies the question and plan tools, after any config's rules.

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
CONFIG = "OPENCODE_CONFIG_CONTENT"
# opencode's provider: the gateway's, and what its SDK's base URL ends with.
GATEWAY_PROVIDERS = {"anthropic": ("anthropic", "/v1"), "openai": ("openai", ""),
                     "google": ("gemini", "/v1beta")}  # fmt: skip


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
        # The OPENCODE_DISABLE_* switches come with TMPDIR (core/runtime_env.py).
        return {**super().environment(invocation), CONFIG: json.dumps(configuration(invocation))}

    def meter(self, invocation: Invocation) -> UsageMeter:
        return OpencodeMeter()


def configuration(invocation: Invocation) -> dict[str, Any]:
    """Ballet's defaults, under the declared configuration, under what Ballet needs."""
    defaults: dict[str, Any] = {"$schema": "https://opencode.ai/config.json"}
    needed: dict[str, Any] = {"autoupdate": False, "share": "disabled"}
    endpoint = gateway_endpoint(invocation) if invocation.gateway else invocation.base_url
    if endpoint:
        provider, model_id = provider_and_model(invocation.model)
        needed["provider"] = {provider: {"options": {"baseURL": endpoint}}}
        if provider not in BUILT_IN_PROVIDERS:
            defaults["provider"] = {
                provider: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": provider,
                    "options": {"apiKey": "{env:OPENAI_API_KEY}"},
                    "models": {model_id: {"name": model_id}},
                }
            }
    return merged(merged(defaults, declared_configuration(invocation)), needed)


def gateway_endpoint(invocation: Invocation) -> str | None:
    """The model gateway's address for the model's provider, as its AI SDK package
    expects it (Anthropic's and Google's put their API version in the base URL)."""
    provider, _, model_id = (invocation.model or "").partition("/")
    if not model_id:  # opencode's default model: its provider is opencode's choice
        return None
    ours, suffix = GATEWAY_PROVIDERS.get(provider, ("openai", ""))
    found = invocation.gateway.get(ours)
    return found + suffix if found else None


def declared_configuration(invocation: Invocation) -> dict[str, Any]:
    text = invocation.declared.get(CONFIG)
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        # The error names a position, never the value (it may hold a key).
        raise RuntimeConfigError(
            f"{CONFIG}, declared in the runtime's `env:`, is not valid JSON ({error}); "
            "opencode reads it as its configuration and Ballet merges its own settings "
            "into it: give it a JSON object (without comments)"
        ) from None
    if not isinstance(value, dict):
        raise RuntimeConfigError(
            f"{CONFIG}, declared in the runtime's `env:`, is JSON but not an object; "
            "opencode reads it as its configuration: give it a JSON object, "
            '`{"key": value, …}`'
        )
    return value


def merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` laid on `base`: objects merged key by key, any other value replaced."""
    result = dict(base)
    for key, value in over.items():
        below = result.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            result[key] = merged(below, value)
        else:
            result[key] = value
    return result


def provider_and_model(model: str | None) -> tuple[str, str]:
    provider, _, model_id = (model or "").partition("/")
    if not provider or not model_id:
        raise RuntimeConfigError(
            "an opencode runtime with `base_url` needs `model: <provider>/<model>`, "
            "e.g. `model: openai/gpt-5` or `model: local/qwen3-coder` for an "
            "OpenAI-compatible server"
        )
    return provider, model_id


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
