"""The model gateway on a real unix socket, forwarding to real upstreams on loopback:
the provider sees the real key and never the session's token, a forged or another
session's token gets a 401 in the provider's shape, answers stream unbuffered, and
a reached cap refuses the next request before it is forwarded."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.core.provider_keys import Provider
from ballet.core.spend import SessionBudget, Spend
from ballet.sessions.gateway import (
    GatewaySession,
    ModelGateway,
    MonthlyCaps,
    SessionTerms,
    UpstreamsError,
    parse_upstreams,
)
from model_server import ModelServer

REAL = "sk-ant-the-real-key"


class CountingMeter:
    """A dollar per answer that says any usage; the real meter is core/metering.py's."""

    def __init__(self) -> None:
        self.seen = b""

    def feed(self, chunk: bytes | memoryview, needle_absent: bool = False) -> None:
        self.seen += chunk

    def spent(self, at: datetime) -> tuple[str | None, Spend] | None:
        if b'"usage"' not in self.seen and b"usageMetadata" not in self.seen:
            return None
        return "some-model", Spend(requests=1, input_tokens=5, output_tokens=2, cost_usd=1.0)


class CountingMetering:
    def __init__(self) -> None:
        self.paths: list[str] = []

    def meter(self, provider: str, api: str, content_type: str, model: str | None) -> CountingMeter:
        self.paths.append(f"{provider} {api} {model}")
        return CountingMeter()


class MonthLedger:
    def __init__(self, month_usd: float) -> None:
        self.month_usd = month_usd
        self.added: list[Spend] = []
        self.sessions: list[str | None] = []  # whose answer each was
        self.asked = 0  # for the month's spend

    async def add(self, **kwargs: Any) -> None:
        self.added.append(kwargs["spend"])
        self.sessions.append(kwargs.get("session"))
        self.month_usd += kwargs["spend"].cost_usd

    async def month(self, **kwargs: Any) -> tuple[Spend, Spend]:
        self.asked += 1
        return Spend(cost_usd=self.month_usd), Spend(cost_usd=self.month_usd)


def client_on(socket: Path) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(uds=str(socket)), base_url="http://gateway"
    )


@contextlib.asynccontextmanager
async def openai_through(
    gateway: ModelGateway, terms: SessionTerms, socket: Path
) -> AsyncIterator[tuple[GatewaySession, httpx.AsyncClient, dict[str, str]]]:
    """A session holding an OpenAI key, a client on its socket, and its token's header."""
    keys: dict[str, tuple[Provider, str]] = {"OPENAI_API_KEY": ("openai", "sk-real")}
    async with gateway.session(terms, keys, socket) as served, client_on(socket) as client:
        yield served, client, {"authorization": f"Bearer {served.tokens['OPENAI_API_KEY']}"}


def messages(token: str, header: str = "x-api-key") -> dict[str, Any]:
    value = f"Bearer {token}" if header == "authorization" else token
    return {
        "headers": {header: value, "anthropic-version": "2023-06-01"},
        "json": {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": []},
    }


def test_the_provider_gets_the_real_key_and_forged_tokens_get_nothing(
    model_server: ModelServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        metering = CountingMetering()
        gateway = ModelGateway(metering, upstreams={"anthropic": model_server.url})
        terms = SessionTerms(session="s1", repo="octo/demo")
        keys = {"ANTHROPIC_API_KEY": ("anthropic", REAL)}
        other_keys = {"ANTHROPIC_API_KEY": ("anthropic", "sk-ant-other-real")}
        async with (
            gateway.session(terms, keys, tmp_path / "one.sock") as one,
            gateway.session(terms, other_keys, tmp_path / "two.sock") as two,
            client_on(tmp_path / "one.sock") as client,
        ):
            token = one.tokens["ANTHROPIC_API_KEY"]
            assert token != REAL and len(token) >= 43
            answer = await client.post("/anthropic/v1/messages", **messages(token))
            assert answer.status_code == 200, answer.text
            assert answer.json()["usage"]["output_tokens"] > 0
            # Twice on one kept-alive connection, the second as a bearer token.
            again = await client.post("/anthropic/v1/messages", **messages(token, "authorization"))
            assert again.status_code == 200, again.text
            seen = [r["headers"] for r in model_server.requests]
            assert [h.get("x-api-key") for h in seen] == [REAL, REAL]
            assert not any(token in json.dumps(h) for h in seen)
            assert all(h.get("accept-encoding") == "identity" for h in seen)
            assert one.spend.requests == 2 and one.spend.cost_usd == 2.0
            assert metering.paths == ["anthropic anthropic_messages None"] * 2

            forged = [
                messages("sk-ant-forged"),
                messages(two.tokens["ANTHROPIC_API_KEY"]),  # another session's, alive
                messages(REAL),  # the real key itself is no token
                {"json": {}},  # nothing at all
                messages(token) | {"params": {"key": "x"}},  # a token of the wrong provider
            ]
            for n, request in enumerate(forged):
                path = "/gemini/v1beta/models/g:generateContent" if n == 4 else None
                refused = await client.post(path or "/anthropic/v1/messages", **request)
                assert refused.status_code == 401, (n, refused.text)
                body = refused.json()
                if path is None:
                    assert body["type"] == "error"
                    assert body["error"]["type"] == "authentication_error"
                else:
                    assert body["error"]["status"] == "UNAUTHENTICATED"
            assert one.refused == len(forged)
            assert len(model_server.requests) == 2  # none of them went upstream
        assert not (tmp_path / "one.sock").exists()  # the token is worthless once gone

    asyncio.run(scenario())


def test_gemini_gets_its_key_in_a_header_and_never_the_tokens_query(
    model_server: ModelServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        metering = CountingMetering()
        gateway = ModelGateway(metering, upstreams=parse_upstreams(f"gemini={model_server.url}"))
        terms = SessionTerms(session="s1", repo="octo/demo")
        keys = {"GEMINI_API_KEY": ("gemini", "gemini-real")}
        async with (
            gateway.session(terms, keys, tmp_path / "g.sock") as served,
            client_on(tmp_path / "g.sock") as client,
        ):
            token = served.tokens["GEMINI_API_KEY"]
            path = "/gemini/v1beta/models/gemini-2.5-pro:generateContent"
            answer = await client.post(path, params={"key": token, "alt": "json"}, json={})
            assert answer.status_code == 200, answer.text
        assert model_server.requests[0]["headers"]["x-goog-api-key"] == "gemini-real"
        assert metering.paths == ["gemini gemini gemini-2.5-pro"]

    asyncio.run(scenario())


def test_a_reached_cap_refuses_the_next_request_before_it_is_forwarded(
    model_server: ModelServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        gateway = ModelGateway(CountingMetering(), upstreams={"openai": model_server.url + "/v1"})
        terms = SessionTerms(
            session="s1", repo="octo/demo", budget=SessionBudget(ticket_usd=2.5, ticket_spent_usd=1)
        )
        async with openai_through(gateway, terms, tmp_path / "o.sock") as (served, client, auth):
            body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
            for _ in range(2):  # $1 before, $1 each: $3 spent once both are in
                ok = await client.post("/openai/chat/completions", headers=auth, json=body)
                assert ok.status_code == 200, ok.text
            refused = await client.post("/openai/chat/completions", headers=auth, json=body)
        assert refused.status_code == 400
        message = refused.json()["error"]["message"]
        assert "this ticket's cost cap ($2.50) is reached: $3.00 spent" in message
        assert served.cap_reached is not None and served.cap_reached.scope == "ticket"
        assert len(model_server.requests) == 2

    asyncio.run(scenario())


def test_the_monthly_repository_cap_comes_from_the_ledger(
    model_server: ModelServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        ledger = MonthLedger(month_usd=9.5)
        gateway = ModelGateway(
            CountingMetering(),
            ledger=ledger,
            monthly=MonthlyCaps(repository_usd=10),
            upstreams={"openai": model_server.url + "/v1"},
        )
        terms = SessionTerms(session="s1", repo="octo/demo", installation_id=7)
        async with openai_through(gateway, terms, tmp_path / "o.sock") as (served, client, auth):
            body = {"model": "gpt-4.1", "messages": []}
            first = await client.post("/openai/chat/completions", headers=auth, json=body)
            second = await client.post("/openai/chat/completions", headers=auth, json=body)
        assert (first.status_code, second.status_code) == (200, 400)
        assert ledger.added == [Spend(requests=1, input_tokens=5, output_tokens=2, cost_usd=1.0)]
        assert ledger.sessions == ["s1"]  # kept per session too, for a crash report
        assert served.cap_reached is not None
        assert served.cap_reached.says() == (
            "this repository's monthly cost cap ($10.00) is reached: $10.50 spent"
        )

    asyncio.run(scenario())


async def held_upstream(release: asyncio.Event) -> tuple[asyncio.Server, int]:
    """An upstream that sends one SSE event, then the rest only once released."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
        first = b"event: one\ndata: {}\n\n"
        writer.write(b"%x\r\n%s\r\n" % (len(first), first))
        await writer.drain()
        await release.wait()
        last = b"event: two\ndata: {}\n\n"
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def test_a_stream_comes_down_as_it_comes(tmp_path: Path) -> None:
    async def scenario() -> list[bytes]:
        release = asyncio.Event()
        upstream, port = await held_upstream(release)
        gateway = ModelGateway(
            CountingMetering(), upstreams={"anthropic": f"http://127.0.0.1:{port}"}
        )
        terms = SessionTerms(session="s1", repo="octo/demo")
        chunks: list[bytes] = []
        async with (
            gateway.session(
                terms, {"ANTHROPIC_API_KEY": ("anthropic", REAL)}, tmp_path / "s.sock"
            ) as served,
            client_on(tmp_path / "s.sock") as client,
        ):
            request = messages(served.tokens["ANTHROPIC_API_KEY"])
            async with client.stream("POST", "/anthropic/v1/messages", **request) as answer:
                stream: AsyncIterator[bytes] = answer.aiter_raw()
                # The first event arrives while the upstream still holds the second.
                # (A bound only against a hang, should it be buffered.)
                chunks.append(await asyncio.wait_for(anext(stream), 60))
                release.set()
                chunks += [chunk async for chunk in stream]
        upstream.close()
        await gateway.aclose()
        return chunks

    chunks = asyncio.run(scenario())
    assert chunks[0] == b"event: one\ndata: {}\n\n"
    assert b"".join(chunks[1:]) == b"event: two\ndata: {}\n\n"


def test_bad_upstreams_say_what_to_write() -> None:
    assert parse_upstreams("anthropic=https://proxy.corp/a/, openai=http://127.0.0.1:8080/v1") == {
        "anthropic": "https://proxy.corp/a",
        "openai": "http://127.0.0.1:8080/v1",
    }
    for wrong in ("claude=https://x", "openai=ftp://x", "openai"):
        with pytest.raises(UpstreamsError, match="provider=URL"):
            parse_upstreams(wrong)


def test_a_client_waiting_for_100_continue_is_told_to_go_on(
    model_server: ModelServer, tmp_path: Path
) -> None:
    async def scenario() -> tuple[bytes, bytes]:
        gateway = ModelGateway(CountingMetering(), upstreams={"anthropic": model_server.url})
        terms = SessionTerms(session="s1", repo="octo/demo")
        keys = {"ANTHROPIC_API_KEY": ("anthropic", REAL)}
        async with gateway.session(terms, keys, tmp_path / "c.sock") as served:
            reader, writer = await asyncio.open_unix_connection(str(tmp_path / "c.sock"))
            body = json.dumps({"model": "claude-sonnet-4-5", "messages": []}).encode()
            body += b" " * (2 << 20)  # large enough that curl would ask first
            token = served.tokens["ANTHROPIC_API_KEY"]
            writer.write(
                b"POST /anthropic/v1/messages HTTP/1.1\r\nhost: gateway\r\n"
                b"content-type: application/json\r\nexpect: 100-continue\r\n"
                + f"x-api-key: {token}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
            )
            # Before any byte of the body (a bound only against a hang, should it not come).
            interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
            writer.write(body)
            final = await reader.readuntil(b"\r\n\r\n")
            writer.close()
        await gateway.aclose()
        return interim, final

    interim, final = asyncio.run(scenario())
    assert interim.startswith(b"HTTP/1.1 100 ")
    assert final.startswith(b"HTTP/1.1 200 ")
    assert "expect" not in model_server.requests[0]["headers"]


def test_the_upstream_connection_is_kept_alive_across_requests(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, list[int]]:
        accepted = 0

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal accepted
            accepted += 1
            body = b'{"usage": {"input_tokens": 1, "output_tokens": 1}}'
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                    await reader.readexactly(length)
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                 b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
            except asyncio.IncompleteReadError:
                writer.close()

        upstream = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = upstream.sockets[0].getsockname()[1]
        gateway = ModelGateway(
            CountingMetering(), upstreams={"anthropic": f"http://127.0.0.1:{port}"}
        )
        terms = SessionTerms(session="s1", repo="octo/demo")
        statuses = []
        async with (
            gateway.session(
                terms, {"ANTHROPIC_API_KEY": ("anthropic", REAL)}, tmp_path / "k.sock"
            ) as served,
            client_on(tmp_path / "k.sock") as client,
        ):
            for _ in range(3):
                answer_ = await client.post(
                    "/anthropic/v1/messages", **messages(served.tokens["ANTHROPIC_API_KEY"])
                )
                statuses.append(answer_.status_code)
        await gateway.aclose()
        upstream.close()
        return accepted, statuses

    accepted, statuses = asyncio.run(scenario())
    assert statuses == [200, 200, 200]
    assert accepted == 1


def test_only_metered_calls_and_requests_that_spend_nothing_go_upstream(
    model_server: ModelServer, tmp_path: Path
) -> None:
    """A call the meter cannot read (a legacy completion, an embedding) would spend
    what no cap sees: refused before it leaves. Reads and token counts go on."""

    async def scenario() -> None:
        metering = CountingMetering()
        gateway = ModelGateway(metering, upstreams={"anthropic": model_server.url})
        terms = SessionTerms(session="s1", repo="octo/demo")
        keys = {"ANTHROPIC_API_KEY": ("anthropic", REAL)}
        async with (
            gateway.session(terms, keys, tmp_path / "g.sock") as served,
            client_on(tmp_path / "g.sock") as client,
        ):
            token = {"x-api-key": served.tokens["ANTHROPIC_API_KEY"]}
            listed = await client.get("/anthropic/v1/models", headers=token)
            count = "/anthropic/v1/messages/count_tokens"
            counted = await client.post(count, headers=token, json={})
            refused = await client.post("/anthropic/v1/complete", headers=token, json={})
        assert listed.status_code == 200 and counted.status_code == 200, counted.text
        assert refused.status_code == 403
        assert "POST /anthropic/v1/complete is neither" in refused.json()["error"]["message"]
        assert [r["path"] for r in model_server.requests] == ["/v1/messages/count_tokens"]
        assert metering.paths == []  # what spends nothing is not metered

    asyncio.run(scenario())


def test_a_call_never_forwarded_is_refused_as_such_before_any_cap_is_read(
    model_server: ModelServer, tmp_path: Path
) -> None:
    """With every cap reached, an embedding is still answered 403 (it would not go
    whatever was spent), no cap is read for it (not the ledger either) and the session
    is not stopped by it; the next model call is refused by the cap."""

    async def scenario() -> None:
        ledger = MonthLedger(month_usd=50)
        gateway = ModelGateway(
            CountingMetering(),
            ledger=ledger,
            monthly=MonthlyCaps(repository_usd=10),
            upstreams={"openai": model_server.url + "/v1"},
        )
        budget = SessionBudget(ticket_usd=1, ticket_spent_usd=2)
        terms = SessionTerms(session="s1", repo="octo/demo", budget=budget)
        async with openai_through(gateway, terms, tmp_path / "o.sock") as (served, client, auth):
            embedding = await client.post("/openai/embeddings", headers=auth, json={})
            assert embedding.status_code == 403, embedding.text
            assert "POST /openai/embeddings is neither" in embedding.json()["error"]["message"]
            assert (ledger.asked, served.cap_reached, served.refused) == (0, None, 1)
            body = {"model": "gpt-4.1", "messages": []}
            capped = await client.post("/openai/chat/completions", headers=auth, json=body)
        assert capped.status_code == 400
        assert served.cap_reached is not None and served.cap_reached.scope == "ticket"
        assert ledger.asked == 1 and model_server.requests == []

    asyncio.run(scenario())


def test_a_streamed_chat_request_is_asked_for_its_usage(
    model_server: ModelServer, tmp_path: Path
) -> None:
    """Without `stream_options.include_usage` a streamed Chat answer says no usage and
    no cap would hold: the gateway asks for it, the CLI's other options kept."""

    async def scenario() -> None:
        gateway = ModelGateway(CountingMetering(), upstreams={"openai": model_server.url + "/v1"})
        terms = SessionTerms(session="s1", repo="octo/demo")
        async with openai_through(gateway, terms, tmp_path / "c.sock") as (served, client, auth):
            body = {
                "model": "gpt-4.1",
                "stream": True,
                "stream_options": {"continuous_usage_stats": False},
                "messages": [{"role": "user", "content": "include_usage: false"}],
            }
            answer = await client.post("/openai/chat/completions", headers=auth, json=body)
            assert answer.status_code == 200, answer.text
        sent = model_server.requests[0]["body"]
        assert sent["stream_options"] == {"continuous_usage_stats": False, "include_usage": True}
        assert sent["messages"] == body["messages"]
        assert served.spend.requests == 1

    asyncio.run(scenario())
