"""A HEAD request through the gateway: the upstream's answer says how long a GET's
body would be (`content-length`) or that it would be chunked, and sends none. The
parser cannot know the request was HEAD, so the gateway must: the answer ends at its
head, and the connection that carried it is not offered to the next request."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from ballet.core.provider_keys import Provider
from ballet.sessions.gateway import ModelGateway, ProviderMetering, SessionTerms

KEYS: dict[str, tuple[Provider, str]] = {"ANTHROPIC_API_KEY": ("anthropic", "k")}
MODELS = b'{"data": []}'


class Upstream:
    """Answers HEAD with a head alone (framed as its GET's would be), GET with a body."""

    def __init__(self, framing: bytes) -> None:
        self.framing = framing
        self.requests: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head.split(b" ", 1)[0])
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
                if head.startswith(b"HEAD "):
                    writer.write(self.framing + b"\r\n")
                else:
                    writer.write(b"content-length: %d\r\n\r\n%s" % (len(MODELS), MODELS))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.mark.parametrize(
    "framing", [b"content-length: 4096\r\n", b"transfer-encoding: chunked\r\n"]
)
def test_a_head_request_ends_at_its_head_and_the_next_request_is_answered(
    tmp_path: Path, framing: bytes
) -> None:
    upstream = Upstream(framing)

    async def scenario() -> tuple[bytes, bytes]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        gateway = ModelGateway(ProviderMetering(), upstreams={"anthropic": base})
        path = tmp_path / "h.sock"
        async with gateway.session(SessionTerms(session="s", repo="o/r"), KEYS, path) as s:
            token = s.tokens["ANTHROPIC_API_KEY"].encode()
            reader, writer = await asyncio.open_unix_connection(str(path))
            ask = b" /anthropic/v1/models HTTP/1.1\r\nhost: gateway\r\nx-api-key: %s\r\n\r\n"
            writer.write(b"HEAD" + ask % token)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            writer.write(b"GET" + ask % token)
            after = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            body = await asyncio.wait_for(reader.readexactly(len(MODELS)), 10)
            writer.close()
        await gateway.aclose()
        server.close()
        return head, after + body

    head, after = asyncio.run(scenario())
    assert head.startswith(b"HTTP/1.1 200")
    assert after.startswith(b"HTTP/1.1 200") and after.endswith(MODELS)
    assert upstream.requests == [b"HEAD", b"GET"]
