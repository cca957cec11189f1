"""What the meter reads from the scripted model server equals what it served.

The real-CLI tests (tests/runtimes/, tests/e2e/test_real_cli.py) hold the
gateway's meter to the server's `served` list; this holds the meter alone to
each of the server's four APIs, streamed and not, read piece by piece as httpx
gives them over loopback."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from ballet.core.metering import Api, UsageReader, api_of, gemini_model_of

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("anthropic", "/v1/messages", {"model": "claude-sonnet-4-5", "messages": []}),
    ("openai", "/v1/responses", {"model": "gpt-5.1-codex", "input": []}),
    ("openai", "/v1/chat/completions", {"model": "gpt-4.1", "messages": []}),
    ("gemini", "/v1beta/models/gemini-2.5-pro:generateContent", {"contents": []}),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("provider", "path", "body"), CALLS)
def test_metered_tokens_equal_those_served(
    model_server: Any, provider: str, path: str, body: dict[str, Any], stream: bool
) -> None:
    if stream and provider == "gemini":
        path = path.replace(":generateContent", ":streamGenerateContent") + "?alt=sse"
    elif stream:
        body = {**body, "stream": True}
    api: Api | None = api_of(provider, "POST", path)
    assert api is not None
    with (
        httpx.Client(base_url=model_server.url) as client,
        client.stream("POST", path, json=body) as answer,
    ):
        reader = UsageReader(api, answer.headers["content-type"], gemini_model_of(path))
        for piece in answer.iter_raw():
            reader.feed(piece)
    usage = reader.result()

    [served] = model_server.served
    assert usage is not None
    assert usage.input_tokens + usage.cache_read_tokens == served.input_tokens
    assert usage.cache_read_tokens == served.cached_tokens > 0
    assert usage.output_tokens == served.output_tokens
    assert usage.model == (body.get("model") or "gemini-2.5-pro")
