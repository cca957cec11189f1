"""Connections held to their limits, at the protocol: uvicorn bounds none of these.

uvicorn's keep-alive timeout starts only after a first response and any byte
received cancels it, so a connection that sends nothing, or a header byte now
and then, or half a body, stays open for ever; httptools sets no limit on a
request head's size; and `limit_concurrency` answers 503 only once a request's
head is whole, after its descriptor is taken, and never closes an idle
connection. Here each connection must send a whole request head within
`idle_seconds` of connecting or of its last response, and a whole body within
`body_seconds` of its head, or it is answered 408 and closed; a head over
`max_head_bytes` is answered 431. Past `max_connections` the oldest idle
connection (no request in progress) is closed to make room; when every one is
busy, a newcomer may still ask /healthz or /readyz and is answered 503 for
anything else, and past the listen backlog beyond that it is closed at once.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any, ClassVar

import orjson
import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ballet.web.coalesce import CoalescingHttpToolsProtocol
from ballet.web.limits import ConnectionLimits

log = structlog.get_logger("ballet.web")

PROBES = frozenset({"/healthz", "/readyz"})
_CLOSE = (b"connection", b"close")
# How often the limits' work is logged, with counts: an attack is news once, not per connection.
SAY_EVERY_SECONDS = 10.0

FULL = (
    "Ballet holds as many connections as it may (BALLET_WEB_MAX_CONNECTIONS, within its"
    " open-file limit) and every one is busy: try again shortly; a webhook delivery refused"
    " now is asked for again from GitHub by the redelivery sweep"
)


def _raw_answer(status: str, error: str, message: str) -> bytes:
    body = orjson.dumps({"error": error, "message": message})
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


SLOW_HEAD = _raw_answer(
    "408 Request Timeout",
    "timeout",
    "the request's head did not arrive in time (BALLET_WEB_IDLE_SECONDS): send it whole",
)
SLOW_BODY = _raw_answer(
    "408 Request Timeout",
    "timeout",
    "the request's body did not arrive in time (BALLET_WEB_BODY_SECONDS): send it whole",
)


def head_too_large(max_head_bytes: int) -> bytes:
    return _raw_answer(
        "431 Request Header Fields Too Large",
        "head_too_large",
        f"the request line and headers are over {_size(max_head_bytes)}: "
        "send fewer or shorter headers",
    )


def _size(count: int) -> str:
    return f"{count // 1024} KiB" if count % 1024 == 0 else f"{count} bytes"


NO_ROOM = _raw_answer("503 Service Unavailable", "busy", FULL)
_BUSY = orjson.dumps({"error": "busy", "message": FULL})  # NO_ROOM's body, through the app


class Room:
    """One server's connections that may be closed to make room: the idle ones,
    oldest first; and counts of what the limits did, said now and then."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.head_too_large = head_too_large(limits.max_head_bytes)  # built once, not per refusal
        self.idle: dict[GuardedProtocol, None] = {}  # insertion order: oldest first
        self._counts: dict[str, int] = {}
        self._said_at = -math.inf

    def make_room(self) -> bool:
        """Close the oldest idle connection; False if every one is busy."""
        while self.idle:
            oldest = next(iter(self.idle))
            del self.idle[oldest]
            if not oldest.transport.is_closing():
                oldest.transport.close()
                self.count("closed idle to make room")
                return True
        return False

    def count(self, what: str) -> None:
        self._counts[what] = self._counts.get(what, 0) + 1
        now = asyncio.get_running_loop().time()
        if now - self._said_at >= SAY_EVERY_SECONDS:
            self._said_at = now
            said = ", ".join(f"{n} {name}" for name, n in sorted(self._counts.items()))
            self._counts.clear()
            log.warning(f"web connections held to their limits: {said}")


class _ProbesOnly:
    """A connection over the limit may ask whether Ballet is alive, nothing more."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("path") in PROBES:
            # Answered, then closed: a connection let in over the limit stays for one.
            async def closing(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", ()), _CLOSE]}
                await send(message)

            await self._app(scope, receive, closing)
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(_BUSY)).encode()),
            _CLOSE,
        ]
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": _BUSY})


class GuardedProtocol(CoalescingHttpToolsProtocol):
    room: ClassVar[Room]  # set on the class guarded_protocol makes

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = True
        self._head_bytes = 0
        self._message_done = False  # the request's body has all arrived
        self._answered = False  # its response has all been sent

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        room, limits = self.room, self.room.limits
        if len(self.connections) > limits.max_connections and not room.make_room():
            if len(self.connections) > limits.max_connections + limits.backlog:
                room.count("refused at once")
                self._answer_and_close(NO_ROOM)
                return
            room.count("let in for a probe only")
            self.app = _ProbesOnly(self.app)
        room.idle[self] = None
        self._arm(limits.idle_seconds, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._disarm()
        self.room.idle.pop(self, None)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        # Still in the head once the parser had it all: every byte so far was head.
        if self._in_head and self._head_bytes > self.room.limits.max_head_bytes:
            self.room.count("refused for a head too large")
            self._answer_and_close(self.room.head_too_large)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._message_done = self._answered = False
        self.room.idle.pop(self, None)
        super().on_headers_complete()
        self._arm(self.room.limits.body_seconds, self._body_too_slow)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._message_done = True
        if self._answered:  # answered before its body was read: now the next request
            self._await_next_head()
        else:
            self._disarm()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)
        super().on_response_complete()
        if pipelined or self.transport.is_closing():
            return
        self._answered = True
        # Else the rest of the body still comes, within its own deadline.
        if self._message_done:
            self._await_next_head()

    def _await_next_head(self) -> None:
        self._in_head = True
        self._head_bytes = 0
        self.room.idle[self] = None
        self._arm(self.room.limits.idle_seconds, self._head_too_slow)

    def _head_too_slow(self) -> None:
        self._deadline = None
        if self._head_bytes:
            self.room.count("closed for a head too slow")
            self._answer_and_close(SLOW_HEAD)
        elif not self.transport.is_closing():
            self.room.count("closed idle")
            self.transport.close()

    def _body_too_slow(self) -> None:
        self._deadline = None
        self.room.count("closed for a body too slow")
        if self.cycle is not None and not self.cycle.response_started:
            self._answer_and_close(SLOW_BODY)
        else:
            self.transport.close()

    def _answer_and_close(self, answer: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    def _arm(self, seconds: float, callback: Any) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedProtocol]:
    """The protocol class of one server: its connections share one Room."""
    return type("GuardedConnection", (GuardedProtocol,), {"room": Room(limits)})
