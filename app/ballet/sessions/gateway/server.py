"""The model gateway: a session's only way to its model provider, holding its keys.

One `ModelGateway` per worker (its upstream connections, the spend ledger, the
operator's monthly caps); each session gets a `GatewaySession` of its own: a
listener on a unix socket bound into its sandbox (the relay makes it
`127.0.0.1:GATEWAY_PORT` inside) or, unconfined, on a loopback port, and a
token per provider key. Per request, in order:
1. the path's first segment names the provider (`/anthropic/…`, `/openai/…`,
   `/gemini/…`); the request must carry one of the session's tokens for it,
   else 401 in the provider's error shape;
2. a request that is neither a call the gateway meters nor one that spends
   nothing (`core/metering.spends_nothing`) is refused, 403, whatever was spent;
3. every cap is checked (`core/spend.first_reached`): the session's and ticket's
   with what the session spent so far, the repository's and installation's
   with this month's spend; one reached refuses the request (400, the cap's
   words as the message) and is remembered as the session's `cap_reached`;
4. the request goes upstream with the real key in the provider's header form,
   its body streamed as it comes; the answer comes back the same way, what has
   come written down as soon as it is read, in one chunk (SSE and chunked answers
   unbuffered), and fed to the answer's meter on the way; its spend is added to
   the session's, the ledger's and the metrics once the answer has ended.
A stream already under way is never cut: a cap is overrun by at most the
answers in flight when it is reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import h11
import structlog

from ballet.core.metering import Api, api_of, gemini_model_of, spends_nothing, usage_asked
from ballet.core.provider_keys import PROVIDERS, Provider
from ballet.core.spend import Cap, Spend, first_reached
from ballet.sessions.gateway.bodies import bounded, content_type, has_body, once
from ballet.sessions.gateway.forms import (
    HOP_BY_HOP,
    error_body,
    presented,
    upstream_headers,
    with_length,
    without_key,
)
from ballet.sessions.gateway.grants import Grant, SessionGrants
from ballet.sessions.gateway.metering import AnswerMeter, Metering
from ballet.sessions.gateway.receiving import UpstreamError
from ballet.sessions.gateway.splicing import sink_of, splice_answer
from ballet.sessions.gateway.terms import Ledger, MonthlyCaps, Observe, SessionTerms
from ballet.sessions.gateway.upstream import Answer, UpstreamClients, upstream_of
from ballet.sessions.gateway.writes import write_down

log = structlog.get_logger("ballet.gateway")

READ_BYTES = 1 << 16
MAX_HEAD_BYTES = 64 * 1024
# What waits to go down waits in the socket's buffer (2 MiB: the kernel doubles it), then
# asyncio's, small: 3.11's moves its rest after each send (40 MB per 10 MB answer at 1 MiB).
WRITE_BUFFER_BYTES = 1 << 18
SOCKET_BUFFER_BYTES = 1 << 20
MAX_ASKED_BYTES = 64 << 20  # a Chat request read whole to ask for its usage
# How long the answers under way when a session ends are read on and counted.
DRAIN_SECONDS = 30.0
_CHUNKED = b"\r\ntransfer-encoding: chunked\r\n"  # in a head as h11 writes it, lowered


class ModelGateway:
    """The worker's gateway: shared connections and books, a listener per session."""

    def __init__(
        self,
        metering: Metering,
        *,
        ledger: Ledger | None = None,
        monthly: MonthlyCaps | None = None,
        upstreams: Mapping[Provider, str] | None = None,
        observe: Observe | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.metering = metering
        self.ledger = ledger
        self.monthly = monthly or MonthlyCaps()
        self.upstreams = dict(upstreams or {})
        self.observe = observe
        self.clock = clock
        self.clients = UpstreamClients()

    @contextlib.asynccontextmanager
    async def session(
        self, terms: SessionTerms, keys: Mapping[str, tuple[Provider, str]], socket: Path | None
    ) -> AsyncIterator[GatewaySession]:
        """A session's gateway for the block: on `socket` (None: a loopback port)."""
        served = GatewaySession(self, terms, SessionGrants.issue(keys))
        await served.start(socket)
        try:
            yield served
        finally:
            await served.aclose()

    async def aclose(self) -> None:
        await self.clients.aclose()


class GatewaySession:
    def __init__(self, gateway: ModelGateway, terms: SessionTerms, grants: SessionGrants) -> None:
        self.gateway = gateway
        self.terms = terms
        self.grants = grants
        self.spend = Spend()
        self.cap_reached: Cap | None = None
        self.refused = 0  # requests refused: no valid token, or a cap reached
        self.port: int | None = None
        self._server: asyncio.Server | None = None
        self._socket: Path | None = None
        self._tasks: dict[asyncio.Task[None], _Connection] = {}
        self.closing = False  # the session ended: no request is taken any more

    @property
    def tokens(self) -> dict[str, str]:
        return self.grants.tokens

    async def start(self, socket: Path | None) -> None:
        if socket is not None:
            self._server = await asyncio.start_unix_server(self._connected, path=str(socket))
            os.chmod(socket, 0o600)
            self._socket = socket
        else:
            self._server = await asyncio.start_server(self._connected, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        """Stop taking requests; answers under way are read on to their end and
        counted (the provider bills them, whether or not the session is there to
        read them), for DRAIN_SECONDS at most; then every connection is cut."""
        self.closing = True
        if self._server is not None:
            self._server.close()
        answering = [task for task, c in self._tasks.items() if c.answering]
        for task in self._tasks.keys() - set(answering):
            task.cancel()
        if answering:
            await asyncio.wait(answering, timeout=DRAIN_SECONDS)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._socket is not None:
            with contextlib.suppress(FileNotFoundError):
                self._socket.unlink()  # the token is worth nothing once this is gone

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        connection = _Connection(self, reader, writer)
        self._tasks[task] = connection
        try:
            await connection.serve()
        except (OSError, h11.ProtocolError, asyncio.CancelledError):
            pass  # cancelled: the session ended (asyncio would log the task as an error)
        finally:
            self._tasks.pop(task, None)
            writer.close()

    async def reached(self) -> Cap | None:
        caps = list(self.terms.budget.caps(self.spend.cost_usd))
        monthly, ledger = self.gateway.monthly, self.gateway.ledger
        if ledger is not None and (monthly.repository_usd or monthly.installation_usd):
            repo, installation = await ledger.month(
                repo=self.terms.repo,
                installation_id=self.terms.installation_id,
                at=self.gateway.clock(),
            )
            if monthly.repository_usd:
                caps.append(Cap(scope="repository", limit_usd=monthly.repository_usd,
                                spent_usd=repo.cost_usd))  # fmt: skip
            if monthly.installation_usd and self.terms.installation_id is not None:
                caps.append(Cap(scope="installation", limit_usd=monthly.installation_usd,
                                spent_usd=installation.cost_usd))  # fmt: skip
        return first_reached(caps)

    async def spent(self, provider: Provider, model: str | None, spend: Spend) -> None:
        self.spend += spend
        gateway = self.gateway
        if gateway.observe is not None:
            gateway.observe(provider, model, spend)
        if gateway.ledger is not None:
            try:
                await gateway.ledger.add(
                    repo=self.terms.repo, installation_id=self.terms.installation_id,
                    provider=provider, model=model, spend=spend, at=gateway.clock(),
                    session=self.terms.session,
                )  # fmt: skip
            except Exception as error:  # the session's own books still hold it
                log.warning("spend not added to the ledger", session=self.terms.session,
                            error=repr(error))  # fmt: skip

    def upstream(self, provider: Provider) -> str:
        return upstream_of(provider, self.terms.base_url, self.gateway.upstreams)


class _Connection:
    """One HTTP/1.1 connection from the session, its requests one after another."""

    def __init__(
        self, session: GatewaySession, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.session = session
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self._held: list[bytes] = []
        self.answering = False  # a request is being forwarded or its answer read
        # The next chunk is read from upstream while this one is still being written.
        writer.transport.set_write_buffer_limits(high=WRITE_BUFFER_BYTES)
        sock = writer.get_extra_info("socket")
        if sock is not None and sock.family == socket.AF_UNIX:  # TCP sizes its own
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER_BYTES)

    async def serve(self) -> None:
        while not self.session.closing:
            event = await self._next()
            if not isinstance(event, h11.Request) or self.session.closing:
                return
            if not has_body(event) and not isinstance(await self._next(), h11.EndOfMessage):
                return  # a bodiless request's end, read now: else no next request is read
            self.answering = True
            try:
                await self._exchange(event)
            finally:
                self.answering = False
            if self.h11.our_state is not h11.DONE or self.h11.their_state is not h11.DONE:
                return
            self.h11.start_next_cycle()

    async def _next(self) -> h11.Event | type[h11.PAUSED] | type[h11.NEED_DATA]:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self.reader.read(READ_BYTES))

    async def _exchange(self, request: h11.Request) -> None:
        target = request.target.decode("latin-1")
        path, _, query = target.partition("?")
        first, _, rest = path.lstrip("/").partition("/")
        provider = next((p for p in PROVIDERS if p == first), None)
        if provider is None:
            message = f"no provider at {path!r}: the gateway serves /anthropic/, /openai/, /gemini/"
            return await self._refuse("openai", 404, message)
        grant = self.session.grants.check(provider, presented(request.headers, query))
        if grant is None:
            self.session.refused += 1
            log.warning("gateway request without the session's token", provider=provider,
                        session=self.session.terms.session)  # fmt: skip
            message = (
                f"Ballet's model gateway refused this request: it carries no token of this "
                f"session for {provider} (the session's key variable holds it)"
            )
            return await self._refuse(provider, 401, message)
        method = request.method.decode("ascii")
        api = api_of(provider, method, "/" + rest)
        if api is None and not spends_nothing(method, "/" + rest):
            self.session.refused += 1
            message = (
                f"Ballet's model gateway forwards only the model calls it meters and requests "
                f"that spend nothing; {method} {path} is neither"
            )
            return await self._refuse(provider, 403, message)
        cap = await self.session.reached()
        if cap is not None:
            self.session.refused += 1
            self.session.cap_reached = self.session.cap_reached or cap
            message = f"Ballet stopped this session: {cap.says()}. A writer may raise it."
            return await self._refuse(provider, 400, message)
        await self._forward(request, provider, grant, "/" + rest, query, api)

    async def _forward(
        self,
        request: h11.Request,
        provider: Provider,
        grant: Grant,
        path: str,
        query: str,
        api: Api | None,
    ) -> None:
        session = self.session
        query = without_key(query) if provider == "gemini" else query
        url = session.upstream(provider) + path + (f"?{query}" if query else "")
        method = request.method.decode("ascii")
        headers = upstream_headers(request.headers, grant.form, grant.key)
        body = self._body() if has_body(request) else None
        if api == "openai_chat" and body is not None:
            # A streamed Chat answer says its usage only when asked: the body is read
            # whole (bounded) to ask it, or no cap would ever see what it spent.
            whole = b"".join([chunk async for chunk in bounded(body, MAX_ASKED_BYTES)])
            whole = usage_asked(api, whole) or whole
            headers = with_length(headers, len(whole))
            body = once(whole)
        try:
            answer = await session.gateway.clients.send(method, url, headers, body)
        except UpstreamError as error:
            message = f"Ballet's model gateway could not reach {provider}: {error}"
            return await self._refuse(provider, 502, message)
        meter: AnswerMeter | None = None  # a request that spends nothing is not metered
        ended = True
        try:
            if api is not None:
                kind, model = content_type(answer.headers), gemini_model_of(path)
                meter = session.gateway.metering.meter(provider, api, kind, model)
            down = [(n, v) for n, v in answer.headers if n.lower() not in HOP_BY_HOP]
            await self._send(h11.Response(status_code=answer.status, headers=down), held=True)
            chunked = _CHUNKED in b"".join(self._held).lower()
            sink = sink_of(answer, self.writer) if chunked else None
            if sink is None:
                hung_up = await self._relay(answer, meter, chunked)
                ended = not answer.cut_short  # else no end goes down: the session's is cut
                if not hung_up and ended:
                    await self._send(h11.EndOfMessage())
            else:  # its bytes moved by the kernel, a copy metered (splicing.py)
                head, self._held = self._held, []
                ended, hung_up = await splice_answer(answer, sink, head, meter)
                if ended:  # its end went down as the upstream wrote it
                    self.h11.send(h11.EndOfMessage())
        finally:
            answer.close()
        found = meter.spent(session.gateway.clock()) if meter is not None else None
        if found is not None:
            await session.spent(provider, *found)
        if hung_up or not ended:  # the session has part of an answer: its connection goes
            raise ConnectionResetError("the session hung up, or the answer did not end whole")

    async def _relay(self, answer: Answer, meter: AnswerMeter | None, chunked: bool) -> bool:
        """The body read, metered and written down; True when the session hung up."""
        hung_up = False
        async for pieces in answer.body():
            if meter is not None:
                for piece in pieces:
                    meter.feed(piece)
            if not hung_up:
                try:
                    await self._pieces(pieces, chunked)
                except OSError:
                    # The provider bills what it sends all the same (a Chat or Responses
                    # answer says its usage only at its end).
                    if meter is None:
                        raise
                    hung_up = True
        return hung_up

    async def _body(self) -> AsyncIterator[bytes]:
        if self.h11.they_are_waiting_for_100_continue:  # curl's way with a large body
            await self._send(h11.InformationalResponse(status_code=100, headers=[]))
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return
            else:
                raise h11.RemoteProtocolError("the request's body ended early")

    async def _refuse(self, provider: Provider, status: int, message: str) -> None:
        body = error_body(provider, status, message)
        # Its body is not read: the connection closes after the answer.
        headers = [("content-type", "application/json"), ("content-length", str(len(body))),
                   ("connection", "close")]  # fmt: skip
        await self._send(h11.Response(status_code=status, headers=headers), held=True)
        await self._send(h11.Data(data=body), held=True)
        await self._send(h11.EndOfMessage())

    async def _pieces(self, pieces: list[bytes], chunked: bool) -> None:
        """What has come, in one write: one chunk, framed here when chunked (h11 would
        frame each piece apart), else as h11 counts them against the answer's length."""
        if chunked:
            size = sum(len(piece) for piece in pieces)
            if not size:  # (a chunk of nothing would end the answer)
                return
            self._held += [b"%x\r\n" % size, *pieces, b"\r\n"]
        else:
            for piece in pieces:
                self._held += self.h11.send_with_data_passthrough(h11.Data(data=piece)) or []
        await self._flush()

    async def _send(self, event: h11.Event, *, held: bool = False) -> None:
        """`held`: kept to go with the next event's bytes (an answer's head with its
        first chunk: one write, not two)."""
        self._held += self.h11.send_with_data_passthrough(event) or []
        if not held:
            await self._flush()

    async def _flush(self) -> None:
        """All that is held, down in one system call (writes.py)."""
        if self._held:
            out, self._held = self._held, []
            await write_down(self.writer, out)
