"""A large streamed answer through the gateway to a client slower than its upstream:
every byte comes down in order, the upstream's reading waits and resumes, the
answer is metered exactly by the real meter, and the kept-alive upstream
connection serves the next answer the same way."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from ballet.sessions.gateway import ModelGateway, ProviderMetering, SessionTerms


def sse(name: str, data: object) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


START = sse(
    "message_start",
    {
        "type": "message_start",
        "message": {"id": "m", "model": "claude-sonnet-4-5",
                    "usage": {"input_tokens": 10, "output_tokens": 1}},
    },
)  # fmt: skip
DELTA = sse(
    "content_block_delta",
    {"type": "content_block_delta", "index": 0,
     "delta": {"type": "text_delta", "text": "x" * 900}},
)  # fmt: skip
END = sse(
    "message_delta",
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}},
) + sse("message_stop", {"type": "message_stop"})
BLOCKS = 120  # of 64 events: ~7 MB, many times what the gateway reads ahead


def test_a_large_answer_to_a_slow_client_comes_whole_and_metered(tmp_path: Path) -> None:
    sent = START + DELTA * 64 * BLOCKS + END

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
                for part in (START, *[DELTA * 64] * BLOCKS, END):
                    writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def scenario() -> tuple[list[bytes], int, int]:
        upstream = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = upstream.sockets[0].getsockname()[1]
        gateway = ModelGateway(
            ProviderMetering(), upstreams={"anthropic": f"http://127.0.0.1:{port}"}
        )
        terms = SessionTerms(session="s1", repo="octo/demo")
        bodies = []
        socket = tmp_path / "l.sock"
        transport = httpx.AsyncHTTPTransport(uds=str(socket))
        async with (
            gateway.session(terms, {"ANTHROPIC_API_KEY": ("anthropic", "sk-real")}, socket) as s,
            httpx.AsyncClient(transport=transport, base_url="http://gateway") as client,
        ):
            request = {"model": "claude-sonnet-4-5", "stream": True, "messages": []}
            for _ in range(2):
                headers = {"x-api-key": s.tokens["ANTHROPIC_API_KEY"]}
                async with client.stream(
                    "POST", "/anthropic/v1/messages", headers=headers, json=request
                ) as streamed:
                    received = []
                    async for chunk in streamed.aiter_raw():
                        received.append(chunk)
                        if len(received) % 16 == 0:
                            await asyncio.sleep(0.002)  # slower than the upstream
                bodies.append(b"".join(received))
            spend = s.spend
        await gateway.aclose()
        upstream.close()
        return bodies, spend.requests, spend.output_tokens

    bodies, requests, output_tokens = asyncio.run(scenario())
    assert [len(body) for body in bodies] == [len(sent)] * 2
    assert bodies == [sent, sent]
    assert (requests, output_tokens) == (2, 14)
