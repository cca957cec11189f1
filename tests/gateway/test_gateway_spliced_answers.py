"""A chunked answer from a plain-HTTP upstream goes down spliced (splicing.py): the
session's socket carries the upstream's own chunk framing, byte for byte, metered
exactly, on one kept-alive upstream connection; a session that stops reading holds
the upstream back; an upstream that breaks off cuts the session's connection, its
usage so far counted. Over TLS the same answer is read and framed by the gateway,
whole and metered. The meter's memmem search finds what sre's finds."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import subprocess
from pathlib import Path

import pytest
from ballet.core.provider_keys import Provider
from ballet.core.sse_events import find_needle
from ballet.sessions.gateway import ModelGateway, ProviderMetering, SessionTerms
from ballet.sessions.gateway.needle import FIND_USAGE, SMALL
from ballet.sessions.gateway.upstream import UpstreamClients

KEYS: dict[str, tuple[Provider, str]] = {"ANTHROPIC_API_KEY": ("anthropic", "k")}
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def sse(name: str, data: object) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


START = sse("message_start", {"type": "message_start", "message": {
    "model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 1}}})  # fmt: skip
END = sse("message_delta", {"type": "message_delta", "usage": {"output_tokens": 7}})


def deltas(block: int) -> bytes:
    """64 text deltas of their own: a block out of place or a byte lost shows."""
    return b"".join(
        sse("content_block_delta", {"type": "content_block_delta", "delta": {
            "type": "text_delta", "text": f"{block:05d}.{n:02d} " + "abcdefgh" * 110}})
        for n in range(64)
    )  # fmt: skip


def tls(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server's context for 127.0.0.1, and a client's that trusts it."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
         "-days", "1", "-keyout", key, "-out", cert],
        check=True, capture_output=True,
    )  # fmt: skip
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(cert, key)
    return serving, ssl.create_default_context(cafile=str(cert))


def framed(parts: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


class Upstream:
    """Answers every request on a connection with `parts`, chunk by chunk (the head with
    the first, as servers flush them); `cut`: it closes the connection after that many."""

    def __init__(self, parts: list[bytes], cut: int | None = None) -> None:
        self.parts, self.cut = parts, cut
        self.connections = 0
        self.written = 0  # chunks the upstream's socket took

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(int(head.lower().split(b"content-length: ")[1]
                                             .split(b"\r\n")[0]))  # fmt: skip
                writer.write(HEAD)
                for n, part in enumerate(self.parts):
                    if n == self.cut:
                        writer.close()
                        return
                    writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                    await writer.drain()
                    self.written += 1
                writer.write(b"0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


async def ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str) -> None:
    body = json.dumps({"model": "claude-sonnet-4-5", "stream": True}).encode()
    writer.write(b"POST /anthropic/v1/messages HTTP/1.1\r\nhost: gateway\r\nx-api-key: %s\r\n"
                 b"content-length: %d\r\n\r\n%s" % (token.encode(), len(body), body))  # fmt: skip
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head.lower()


async def chunked_body(reader: asyncio.StreamReader) -> bytes:
    """The answer's body as it came on the wire, framing and all, to its last chunk."""
    wire = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.strip(), 16)
        wire += size_line + await reader.readexactly(size + 2)
        if not size:
            return bytes(wire)


def test_a_spliced_answer_comes_as_the_upstream_framed_it_metered_on_one_connection(
    tmp_path: Path,
) -> None:
    parts = [START, *(deltas(block) for block in range(170)), END]  # ~10.5 MB
    upstream = Upstream(parts)

    async def scenario() -> tuple[list[bytes], int, int, int]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        gateway = ModelGateway(ProviderMetering(), upstreams={"anthropic": base})
        path, wires = tmp_path / "s.sock", []
        async with gateway.session(SessionTerms(session="s", repo="o/r"), KEYS, path) as s:
            reader, writer = await asyncio.open_unix_connection(str(path))
            for _ in range(3):
                await ask(reader, writer, s.tokens["ANTHROPIC_API_KEY"])
                wires.append(await chunked_body(reader))
            writer.close()
            spend = s.spend
        await gateway.aclose()
        server.close()
        return wires, spend.requests, spend.output_tokens, upstream.connections

    wires, requests, output_tokens, connections = asyncio.run(scenario())
    # The gateway frames one chunk per read of its own; these are the upstream's 172.
    assert wires == [framed(parts)] * 3
    assert (requests, output_tokens, connections) == (3, 21, 1)


def test_spliced_answers_leave_no_descriptor_behind(tmp_path: Path) -> None:
    """Each answer read after a pause (the upstream ahead: its rounds spliced): the
    gateway holds as many descriptors after the fifth as after the first (its pipes
    kept for the next answer, nothing else), and closes the pipes with itself."""
    parts = [START, *(deltas(block) for block in range(40)), END]
    upstream = Upstream(parts)

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    async def scenario() -> tuple[list[int], int, int, list[bytes]]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        gateway = ModelGateway(ProviderMetering(), upstreams={"anthropic": base})
        path, counts, wires = tmp_path / "d.sock", [], []
        async with gateway.session(SessionTerms(session="s", repo="o/r"), KEYS, path) as s:
            reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 16)
            for _ in range(5):
                await ask(reader, writer, s.tokens["ANTHROPIC_API_KEY"])
                await asyncio.sleep(0.1)
                wires.append(await chunked_body(reader))
                await asyncio.sleep(0)
                counts.append(open_fds())
            writer.close()
        before_close = open_fds()
        await gateway.aclose()
        server.close()
        return counts, before_close, open_fds(), wires

    counts, before_close, after_close, wires = asyncio.run(scenario())
    assert wires == [framed(parts)] * 5
    assert counts == [counts[0]] * 5
    assert after_close <= before_close - 4  # the pair of pipes, and the upstream connection


def test_a_session_that_stops_reading_holds_its_upstream_back(tmp_path: Path) -> None:
    """Memory stays bounded: the gateway takes no more from the upstream than its pipe
    and the sockets' buffers hold (the kernel's TCP buffers grow to their sysctl's
    most); once the session reads on, every byte comes."""
    tcp = [int(Path(f"/proc/sys/net/ipv4/tcp_{kind}").read_text().split()[2])
           for kind in ("rmem", "wmem")]  # fmt: skip
    bound = sum(tcp) + (8 << 20)  # and the pipes, the session's socket, asyncio's buffers
    block = len(deltas(0))
    parts = [START, *(deltas(n) for n in range((bound + (16 << 20)) // block)), END]
    upstream = Upstream(parts)

    async def scenario() -> tuple[list[int], bytes, int]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        gateway = ModelGateway(ProviderMetering(), upstreams={"anthropic": base})
        path, written = tmp_path / "w.sock", []
        async with gateway.session(SessionTerms(session="s", repo="o/r"), KEYS, path) as s:
            reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 16)
            await ask(reader, writer, s.tokens["ANTHROPIC_API_KEY"])
            for _ in range(2):
                await asyncio.sleep(0.5)  # not reading
                written.append(upstream.written)
            wire = await chunked_body(reader)
            writer.close()
            output_tokens = s.spend.output_tokens
        await gateway.aclose()
        server.close()
        return written, wire, output_tokens

    written, wire, output_tokens = asyncio.run(scenario())
    assert written[0] == written[1] < bound // block  # held back, within the buffers
    assert wire == framed(parts)
    assert output_tokens == 7


def test_a_session_that_hangs_up_on_a_spliced_answer_is_charged_for_all_of_it(
    tmp_path: Path,
) -> None:
    """The upstream runs ahead of a session that reads little, so the answer is spliced
    when the session hangs up: the rest is read from the pipe, metered and dropped."""
    parts = [START, *(deltas(block) for block in range(200)), END]
    upstream = Upstream(parts)

    async def scenario() -> tuple[int, int, int]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        gateway = ModelGateway(ProviderMetering(), upstreams={"anthropic": base})
        path = tmp_path / "h.sock"
        async with gateway.session(SessionTerms(session="s", repo="o/r"), KEYS, path) as s:
            reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 16)
            await ask(reader, writer, s.tokens["ANTHROPIC_API_KEY"])
            await reader.readexactly(1 << 20)
            await asyncio.sleep(0.2)  # the upstream ahead, the gateway's writes waiting
            writer.transport.abort()
            for _ in range(250):
                if s.spend.requests:
                    break
                await asyncio.sleep(0.02)
            spend = s.spend
        await gateway.aclose()
        server.close()
        return spend.requests, spend.input_tokens, spend.output_tokens

    assert asyncio.run(scenario()) == (1, 10, 7)


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_an_upstream_that_breaks_off_cuts_the_session_and_what_it_said_is_counted(
    tmp_path: Path, scheme: str
) -> None:
    """Spliced, or read over TLS (which once sent the answer's end all the same: a
    truncated answer looked whole to the session)."""
    parts = [START, *(deltas(block) for block in range(20)), END]
    upstream = Upstream(parts, cut=12)
    serving, trusting = tls(tmp_path) if scheme == "https" else (None, None)

    async def scenario() -> tuple[bytes, int, int]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0, ssl=serving)
        base = f"{scheme}://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        gateway = ModelGateway(ProviderMetering(), upstreams={"anthropic": base})
        gateway.clients = UpstreamClients(tls=trusting)
        path = tmp_path / "b.sock"
        async with gateway.session(SessionTerms(session="s", repo="o/r"), KEYS, path) as s:
            reader, writer = await asyncio.open_unix_connection(str(path))
            await ask(reader, writer, s.tokens["ANTHROPIC_API_KEY"])
            rest = await asyncio.wait_for(reader.read(-1), 10)  # to the connection's end
            writer.close()
            spend = s.spend
        await gateway.aclose()
        server.close()
        return rest, spend.input_tokens, spend.output_tokens

    rest, input_tokens, output_tokens = asyncio.run(scenario())
    assert unframed(rest) == (b"".join(parts[:12]), False)  # no last chunk: not whole
    assert (input_tokens, output_tokens) == (10, 1)  # message_start's usage, all it said


def test_over_tls_the_same_answer_is_read_framed_by_the_gateway_and_metered(
    tmp_path: Path,
) -> None:
    serving, trusting = tls(tmp_path)
    parts = [START, *(deltas(block) for block in range(40)), END]
    upstream = Upstream(parts)

    async def scenario() -> tuple[bytes, int]:
        server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0, ssl=serving)
        base = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        gateway = ModelGateway(ProviderMetering(), upstreams={"anthropic": base})
        gateway.clients = UpstreamClients(tls=trusting)
        path = tmp_path / "t.sock"
        async with gateway.session(SessionTerms(session="s", repo="o/r"), KEYS, path) as s:
            reader, writer = await asyncio.open_unix_connection(str(path))
            await ask(reader, writer, s.tokens["ANTHROPIC_API_KEY"])
            wire = await chunked_body(reader)
            writer.close()
            output_tokens = s.spend.output_tokens
        await gateway.aclose()
        server.close()
        return wire, output_tokens

    wire, output_tokens = asyncio.run(scenario())
    assert wire != framed(parts)  # one chunk per read, framed by the gateway
    assert unframed(wire) == (b"".join(parts), True)
    assert output_tokens == 7


def unframed(wire: bytes) -> tuple[bytes, bool]:
    """The body in a chunked answer's wire, and whether its last chunk came."""
    body, at = bytearray(), 0
    while at < len(wire):
        start = wire.index(b"\r\n", at) + 2
        size = int(wire[at : start - 2], 16)
        if not size:
            return bytes(body), True
        body += wire[start : start + size]
        at = start + size + 2
    return bytes(body), False


@pytest.mark.parametrize("size", [5, SMALL - 1, SMALL, 70_000])
def test_the_meters_memmem_search_finds_what_sres_finds(size: int) -> None:
    text = bytes(range(32, 127)) * (size // 95 + 1)
    for at in (0, size // 2, size - 5):
        piece = bytearray(text[:size])
        piece[at : at + 5] = b"usage"
        data = bytes(piece)
        for end in (size, at + 5, at + 4, 0):
            assert FIND_USAGE(data, end) == find_needle(data, end) == (end >= at + 5)
    assert not FIND_USAGE(text[:size].replace(b"usage", b"usagE"), size)
