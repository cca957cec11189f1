"""Which of a runtime's variables are provider keys, held by the model gateway.

A provider key never enters a session: the gateway (`sessions/gateway/`) keeps
it and the session holds, under the same name, a token valid only on its own
gateway socket for its lifetime. A plain secret in `env:` is passed as it is
(redacted from logs, refused in a push).

A runtime names its keys in `keys:`; a CLI adapter's `env:` entry of a standard
key name counts as one too, so the files written before the gateway keep their
meaning and lose the key. The standard names say their provider; any other
name needs it written (`{NAME: provider}`). CLAUDE_CODE_OAUTH_TOKEN is not one:
it signs in to a Claude subscription, which the gateway cannot meter in dollars,
so it stays a plain secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

Provider = Literal["anthropic", "openai", "gemini"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "gemini")

STANDARD_KEYS: Mapping[str, Provider] = {
    "ANTHROPIC_API_KEY": "anthropic",
    "ANTHROPIC_AUTH_TOKEN": "anthropic",
    "OPENAI_API_KEY": "openai",
    "CODEX_API_KEY": "openai",
    "GEMINI_API_KEY": "gemini",
    "GOOGLE_API_KEY": "gemini",
    "GOOGLE_GENERATIVE_AI_API_KEY": "gemini",
}


def standard_provider(name: str) -> Provider:
    """The provider of a standard key name; ValueError saying what to write otherwise."""
    provider = STANDARD_KEYS.get(name)
    if provider is None:
        raise ValueError(
            f"{name} is not a standard provider key name ({', '.join(STANDARD_KEYS)}): "
            f"name its provider, `- {{{name}: anthropic}}` (anthropic, openai or gemini)"
        )
    return provider


def gateway_keys(
    adapter: str, keys: Mapping[str, Provider], env: tuple[str, ...]
) -> dict[str, Provider]:
    """Every variable of the runtime the gateway holds, with its provider: `keys:`, and
    a CLI adapter's standard key names in `env:` (a `command` runtime's `env:` is its
    own: it names its keys in `keys:`)."""
    found = dict(keys)
    if adapter != "command":
        for name in env:
            if name in STANDARD_KEYS and name not in found:
                found[name] = STANDARD_KEYS[name]
    return found


class UpstreamsError(ValueError):
    """BALLET_PROVIDER_UPSTREAMS cannot be read; the message says what to write."""


def parse_upstreams(text: str) -> dict[Provider, str]:
    """`anthropic=https://llm-proxy.corp/anthropic,openai=http://127.0.0.1:8080/v1`."""
    found: dict[Provider, str] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, _, url = entry.partition("=")
        name, url = name.strip(), url.strip().rstrip("/")
        parts = urlsplit(url)
        provider = next((p for p in PROVIDERS if p == name), None)
        if provider is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamsError(
                f"BALLET_PROVIDER_UPSTREAMS entry {entry!r} is not `provider=URL`: write "
                "e.g. `anthropic=https://llm-proxy.corp/anthropic,openai=http://127.0.0.1:8080/v1`"
                f" (providers: {', '.join(PROVIDERS)}; URLs http:// or https://)"
            )
        found[provider] = url
    return found
