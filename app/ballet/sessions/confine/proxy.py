"""Ballet's egress proxy: a confined session's only way out of its sandbox.

One proxy per session, on a unix socket bound into that session's sandbox (the
in-sandbox relay, `relay.py`, turns it into `127.0.0.1:<port>` for
HTTPS_PROXY). It speaks the two forms of HTTP proxying clients use: `CONNECT
host:port` (HTTPS, end to end encrypted: the proxy sees only the host) and
absolute-URI requests (`GET http://host/path`, plain HTTP).

A destination passes when a rule names it (`EgressPolicy`), and then only to
the addresses it resolves to *now*: a repository's or adapter's rule never
reaches a loopback, private or link-local address (a public name pointed at
10.0.0.1 is refused), and the proxy connects to the address it checked, so a
second DNS answer cannot change it. Everything refused is answered 403 with
the reason, logged and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import structlog

from ballet.core.egress import (
    EgressRule,
    EgressRuleError,
    ip_literal,
    is_public,
    split_host_port,
)

log = structlog.get_logger("ballet.egress")

MAX_HEAD_BYTES = 16 * 1024
CHUNK = 256 * 1024
CONNECT_TIMEOUT_SECONDS = 15.0
HOW_TO_ALLOW = (
    "a repository adds public hosts to its runtime's `egress:` in .ballet.yml; "
    "the operator adds others with BALLET_SESSION_EGRESS_ALLOW"
)


class Refused(Exception):
    """The destination is not allowed; the message says why and how to allow it."""


@dataclass(frozen=True)
class EgressPolicy:
    rules: tuple[EgressRule, ...]
    # Never reachable through a rule the operator did not write (the GitHub API).
    blocked_hosts: frozenset[str] = frozenset()

    def rule_for(self, host: str, port: int) -> EgressRule:
        host = host.lower().rstrip(".")
        for rule in self.rules:
            if rule.matches(host, port) and (rule.trusted or host not in self.blocked_hosts):
                return rule
        raise Refused(f"{host}:{port} is not an allowed destination; {HOW_TO_ALLOW}")


@dataclass
class EgressProxy:
    """Serves one session's egress on `path` until closed."""

    policy: EgressPolicy
    path: Path
    session: str  # the job key, for the log
    refused: list[str] = field(default_factory=list)
    allowed: int = 0
    _server: asyncio.AbstractServer | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(
            self._accept, path=str(self.path), limit=MAX_HEAD_BYTES
        )

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, forward = _parse_head(head)
            host, port = _destination(method, target)
            rule = self.policy.rule_for(host, port)
            up_reader, upstream = await _open(host, port, rule)
        except Refused as refusal:
            self._refuse(writer, str(refusal))
            return
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        self.allowed += 1
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                upstream.write(forward)
            await asyncio.gather(_pipe(reader, upstream), _pipe(up_reader, writer))
        finally:
            upstream.close()
            writer.close()

    def _refuse(self, writer: asyncio.StreamWriter, reason: str) -> None:
        self.refused.append(reason)
        log.warning("session egress refused", session=self.session, reason=reason)
        body = f"ballet: egress refused: {reason}\n".encode()
        writer.write(
            b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        writer.close()


def _parse_head(head: bytes) -> tuple[str, str, bytes]:
    """(method, target, the head to send upstream for a plain-HTTP request)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise Refused(f"not an HTTP proxy request: {lines[0][:200]!r}")
    method, target, version = parts
    if method == "CONNECT":
        return method, target, b""
    url = urlsplit(target)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [
        line
        for line in lines[1:]
        if line and not line.lower().startswith(("proxy-connection:", "proxy-authorization:"))
    ]
    return method, target, "\r\n".join([f"{method} {path} {version}", *kept, "", ""]).encode()


def _destination(method: str, target: str) -> tuple[str, int]:
    try:
        if method == "CONNECT":
            if ":" not in target:
                raise Refused(f"CONNECT {target!r} names no port")
            return split_host_port(target)
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            raise Refused(f"{method} {target[:200]!r}: only http:// URLs or CONNECT are proxied")
        return url.hostname, url.port or 80
    except (EgressRuleError, ValueError) as error:
        raise Refused(str(error)) from error


async def _open(
    host: str, port: int, rule: EgressRule
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    addresses = await _resolve(host, port)
    if not rule.trusted:
        private = [a for a in addresses if not _public(a)]
        if private:
            raise Refused(
                f"{host} resolves to {private[0]}, a loopback, private or link-local address, "
                "which only the operator may allow (BALLET_SESSION_EGRESS_ALLOW)"
            )
    last: OSError | None = None
    for address in addresses:  # the checked addresses, never a fresh lookup
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(address, port, limit=CHUNK), CONNECT_TIMEOUT_SECONDS
            )
        except (OSError, TimeoutError) as error:
            last = error if isinstance(error, OSError) else OSError(str(error))
    raise Refused(f"{host}:{port} is allowed but could not be reached: {last}")


async def _resolve(host: str, port: int) -> list[str]:
    if ip_literal(host) is not None:
        return [host]
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise Refused(f"{host} could not be resolved: {error}") from error
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _public(address: str) -> bool:
    literal = ip_literal(address)
    return literal is not None and is_public(literal)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except (ConnectionError, OSError):
        sink.close()


def policy_for(
    operator: Iterable[EgressRule],
    public: Iterable[EgressRule],
    blocked_hosts: Iterable[str] = (),
) -> EgressPolicy:
    """The operator's rules first (trusted), then the runtime's and repository's."""
    return EgressPolicy(
        rules=(*operator, *public), blocked_hosts=frozenset(h.lower() for h in blocked_hosts)
    )
