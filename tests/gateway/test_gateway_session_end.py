"""A session that ends while an answer is under way: the provider bills it all the
same, so the gateway reads it on to its end and counts it before the session's spend
is read; it takes no request after the end, and idle connections do not hold it."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from ballet.core.spend import Spend
from ballet.sessions.gateway import ModelGateway, ProviderMetering, SessionTerms

KEYS = {"ANTHROPIC_API_KEY": ("anthropic", "k")}


def sse(name: str, data: object) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


START = sse(
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "m",
            "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    },
)
TEXT = sse(
    "content_block_delta",
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x" * 500}},
)
END = sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                            "usage": {"output_tokens": 7}}) + sse("message_stop", {})  # fmt: skip


def request(token: str) -> bytes:
    body = json.dumps({"model": "claude-sonnet-4-5", "stream": True}).encode()
    return (b"POST /anthropic/v1/messages HTTP/1.1\r\nhost: gateway\r\n"
            b"x-api-key: %s\r\ncontent-length: %d\r\n\r\n%s"
            % (token.encode(), len(body), body))  # fmt: skip


async def slow_upstream() -> tuple[asyncio.Server, list[int]]:
    """An Anthropic stream that takes ~0.5 s; `asked` counts the requests it got."""
    asked: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r")[0]))
        asked.append(1)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
        try:
            for part in (START, *[TEXT] * 10, END):
                writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                await writer.drain()
                await asyncio.sleep(0.05)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            pass

    return await asyncio.start_server(answer, "127.0.0.1", 0), asked


def test_an_answer_under_way_when_the_session_ends_is_counted_in_its_spend(
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[Spend, float, list[int]]:
        upstream, asked = await slow_upstream()
        port = upstream.sockets[0].getsockname()[1]
        gateway = ModelGateway(
            ProviderMetering(), upstreams={"anthropic": f"http://127.0.0.1:{port}"}
        )
        path = tmp_path / "g.sock"
        async with gateway.session(SessionTerms(session="s1", repo="octo/demo"), KEYS, path) as s:
            token = s.tokens["ANTHROPIC_API_KEY"]
            _idle_reader, idle_writer = await asyncio.open_unix_connection(str(path))
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(request(token))
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            ended = time.monotonic()
            # The session ends here: its CLI killed at its timeout, say, mid-answer.
        took = time.monotonic() - ended
        spend = s.spend
        # Nothing more is taken once the session has ended.
        writer.write(request(token))
        await asyncio.sleep(0.2)
        writer.close()
        idle_writer.close()
        await gateway.aclose()
        upstream.close()
        return spend, took, asked

    spend, took, asked = asyncio.run(scenario())
    assert (spend.requests, spend.input_tokens, spend.output_tokens) == (1, 10, 7)
    assert took < 10  # the answer's ~0.5 s, not the drain's bound; the idle one held nothing
    assert asked == [1]
