"""A large streamed answer through the gateway to a client slower than its upstream:
every byte comes down in order, the upstream's reading waits and resumes, the
answer is metered exactly by the real meter, and the kept-alive upstream
connection serves the next answer the same way. A usage event cut across two
chunks that arrive apart is metered whole. What the session's socket does not
take at once goes after, in order (writes.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest
from ballet.sessions.gateway import ModelGateway, ProviderMetering, SessionTerms
from ballet.sessions.gateway.writes import write_down


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


def delta(n: int) -> bytes:
    """A text delta of its own: a block out of place or a byte lost shows."""
    text = f"{n:06d} " + "".join(chr(0x20 + (n * 7 + i) % 95) for i in range(890))
    return sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": text}})  # fmt: skip


END = sse(
    "message_delta",
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}},
) + sse("message_stop", {"type": "message_stop"})
BLOCKS = 170  # of 64 events: ~10.5 MB, many times what the gateway reads ahead
DELTAS = [b"".join(delta(64 * block + n) for n in range(64)) for block in range(BLOCKS)]


def test_a_large_answer_to_a_slow_client_comes_whole_and_metered(tmp_path: Path) -> None:
    sent = START + b"".join(DELTAS) + END
    assert len(sent) > 10 * 1024 * 1024

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
                for part in (START, *DELTAS, END):
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


@pytest.mark.parametrize(
    "cut",
    [END.index(b"usage") + 2, END.index(b"\n\n") + 1, END.index(b"data:")],
    ids=["inside usage", "between the blank line's ends", "before its data"],
)
def test_a_usage_event_cut_across_two_chunks_is_metered(tmp_path: Path, cut: int) -> None:
    """The upstream sends the usage event in two chunks, the second after a pause (two
    reads of the gateway, two pieces for the meter): its tokens are counted all the same."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
        for part in (START + delta(0) + END[:cut], END[cut:]):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    async def scenario() -> tuple[bytes, int, int]:
        upstream = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = upstream.sockets[0].getsockname()[1]
        gateway = ModelGateway(
            ProviderMetering(), upstreams={"anthropic": f"http://127.0.0.1:{port}"}
        )
        terms = SessionTerms(session="s1", repo="octo/demo")
        socket = tmp_path / "c.sock"
        async with (
            gateway.session(terms, {"ANTHROPIC_API_KEY": ("anthropic", "sk-real")}, socket) as s,
            httpx.AsyncClient(
                transport=httpx.AsyncHTTPTransport(uds=str(socket)), base_url="http://gateway"
            ) as client,
        ):
            request = {"model": "claude-sonnet-4-5", "stream": True, "messages": []}
            headers = {"x-api-key": s.tokens["ANTHROPIC_API_KEY"]}
            got = await client.post("/anthropic/v1/messages", headers=headers, json=request)
            spend = s.spend
        await gateway.aclose()
        upstream.close()
        return got.content, spend.input_tokens, spend.output_tokens

    body, input_tokens, output_tokens = asyncio.run(scenario())
    assert body == START + delta(0) + END
    assert (input_tokens, output_tokens) == (10, 7)


def test_a_session_that_hangs_up_mid_answer_is_still_charged_for_it(tmp_path: Path) -> None:
    """A CLI that reads the first bytes and hangs up has still made the provider spend
    (a Chat or Responses answer says its usage only at its end): the gateway reads the
    answer on to its end and counts it, or a session could spend past every cap."""
    upstream_done = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
        try:
            for part in (START, *DELTAS[:4], END):
                writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                await writer.drain()
                await asyncio.sleep(0.05)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:  # the gateway hung up too: the rest was never asked for
            pass
        finally:
            upstream_done.set()

    async def scenario() -> tuple[int, int, int]:
        upstream = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = upstream.sockets[0].getsockname()[1]
        gateway = ModelGateway(
            ProviderMetering(), upstreams={"anthropic": f"http://127.0.0.1:{port}"}
        )
        terms = SessionTerms(session="s1", repo="octo/demo")
        path = tmp_path / "h.sock"
        async with gateway.session(terms, {"ANTHROPIC_API_KEY": ("anthropic", "k")}, path) as s:
            reader, writer = await asyncio.open_unix_connection(str(path))
            body = json.dumps({"model": "claude-sonnet-4-5", "stream": True}).encode()
            writer.write(b"POST /anthropic/v1/messages HTTP/1.1\r\nhost: gateway\r\n"
                         b"x-api-key: %s\r\ncontent-length: %d\r\n\r\n%s"
                         % (s.tokens["ANTHROPIC_API_KEY"].encode(), len(body), body))  # fmt: skip
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            writer.transport.abort()  # hung up, the answer under way
            await asyncio.wait_for(upstream_done.wait(), 10)
            for _ in range(100):
                if s.spend.requests:
                    break
                await asyncio.sleep(0.02)
            spend = s.spend
        await gateway.aclose()
        upstream.close()
        return spend.requests, spend.input_tokens, spend.output_tokens

    assert asyncio.run(scenario()) == (1, 10, 7)


def test_what_the_socket_does_not_take_at_once_goes_after_in_order() -> None:
    """Writes to a socket with a small buffer, read slowly: what writev did not send
    waits in asyncio's buffer and goes after; more pieces than one writev takes too."""
    many = [bytes([n % 251]) * 3 for n in range(3000)]  # past IOV_MAX
    writes = [[b"head", b"x" * 300_000, b"tail"], many, [b"%d" % n for n in range(50)]]

    async def scenario() -> bytes:
        ours, theirs = socket.socketpair()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
        theirs.setblocking(False)
        _, writer = await asyncio.open_connection(sock=ours)
        received = bytearray()

        async def read() -> None:
            loop = asyncio.get_running_loop()
            while chunk := await loop.sock_recv(theirs, 4096):
                received.extend(chunk)
                await asyncio.sleep(0)

        reading = asyncio.create_task(read())
        for parts in writes:
            await write_down(writer, parts)
        writer.close()
        await writer.wait_closed()
        await reading
        theirs.close()
        return bytes(received)

    assert asyncio.run(scenario()) == b"".join(b"".join(parts) for parts in writes)


def test_writes_over_tls_go_through_the_transport(tmp_path: Path) -> None:
    """A writer speaking TLS is never written to around its transport: the bytes
    arrive decrypted, whole (straight to its socket they would break the stream)."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-subj", "/CN=localhost", "-days", "1", "-keyout", key, "-out", cert],
        check=True, capture_output=True,
    )  # fmt: skip
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(cert, key)
    trusting = ssl.create_default_context(cafile=str(cert))
    parts = [b"head", b"y" * 100_000, b"tail"]

    async def scenario() -> bytes:
        async def answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await write_down(writer, parts)
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=serving)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=trusting, server_hostname="localhost"
        )
        received = await reader.read(-1)
        writer.close()
        server.close()
        return received

    assert asyncio.run(scenario()) == b"".join(parts)
