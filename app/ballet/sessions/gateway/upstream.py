"""Where each provider's requests go, and the worker's connections to them.

A provider's upstream is, first found: the runtime's `base_url` (the CLI no
longer talks to it: the gateway does), the operator's BALLET_PROVIDER_UPSTREAMS
entry, the provider's public API. Each is the base the CLI's own path is put
under: `https://api.anthropic.com` for `/v1/messages`, `https://api.openai.com/v1`
for `/responses` and `/chat/completions`, Gemini's host for `/v1beta/models/…`.

One httpx client per worker and upstream origin, HTTP/1.1 kept alive (TLS to the
real providers); no timeout on reading an answer (a model may think for minutes
between two events), a bounded one on connecting.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

import httpx

from ballet.core.provider_keys import Provider

PUBLIC_APIS: Mapping[Provider, str] = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com",
}
CONNECT_TIMEOUT_SECONDS = 15.0
POOL_CONNECTIONS = 64


def upstream_of(provider: Provider, base_url: str | None, operator: Mapping[Provider, str]) -> str:
    return (base_url or operator.get(provider) or PUBLIC_APIS[provider]).rstrip("/")


class UpstreamClients:
    """The worker's kept-alive connections, one client per upstream origin."""

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}

    def client(self, url: str) -> httpx.AsyncClient:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        client = self._clients.get(origin)
        if client is None:
            client = httpx.AsyncClient(
                timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_SECONDS),
                limits=httpx.Limits(
                    max_connections=POOL_CONNECTIONS, max_keepalive_connections=POOL_CONNECTIONS
                ),
                trust_env=False,  # the worker's own proxy settings are not the providers'
                follow_redirects=False,
            )
            self._clients[origin] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
