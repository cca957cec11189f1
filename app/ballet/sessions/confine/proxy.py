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

import contextlib
import fcntl
import os
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass
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
CHUNK = 1 << 20
CONNECT_TIMEOUT_SECONDS = 15.0
# A session is one agent: it never needs hundreds of connections at once, and each
# costs the worker a thread; past this many open sockets (a connection and its
# upstream are two), and for a request head that does not come, the proxy lets
# go, so no session can starve the worker's other sessions.
MAX_OPEN_SOCKETS = 128
HEAD_TIMEOUT_SECONDS = 30.0
MAX_REASONS = 50  # refusals kept (and logged) per session; all are counted
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


class EgressProxy:
    """Serves one session's egress on the unix socket `path` until closed.

    A thread per connection, blocking sockets: a session opens few connections,
    and once a tunnel is up its bytes move by splice(2), never through Python,
    so the proxy costs little against a direct download."""

    def __init__(self, policy: EgressPolicy, path: Path, session: str) -> None:
        self.policy = policy
        self.path = path
        self.session = session  # the job key, for the log
        self.refused: list[str] = []  # the first MAX_REASONS refusals' reasons
        self.refused_count = 0
        self.allowed = 0
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False

    async def start(self) -> None:
        self._listener.bind(str(self.path))
        self._listener.listen(64)
        threading.Thread(target=self._accept_loop, name="egress-proxy", daemon=True).start()

    async def aclose(self) -> None:
        with self._lock:
            self._closed = True
            sockets = [self._listener, *self._open]
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                full = len(self._open) >= MAX_OPEN_SOCKETS
            if full:
                self._refuse(client, "too many connections at once")
                client.close()
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _track(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                sock.close()
                return False
            self._open.add(sock)
            return True

    def _serve(self, client: socket.socket) -> None:
        if not self._track(client):
            return
        upstream: socket.socket | None = None
        try:
            head, early = _read_head(client)
            method, target, forward = _parse_head(head)
            host, port = _destination(method, target)
            rule = self.policy.rule_for(host, port)
            upstream = _connect(host, port, rule)
            if not self._track(upstream):
                return
            with self._lock:
                self.allowed += 1
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                upstream.sendall(early)
            else:
                upstream.sendall(forward + early)
            back = threading.Thread(target=_splice, args=(upstream, client), daemon=True)
            back.start()
            _splice(client, upstream)
            back.join()
        except Refused as refusal:
            self._refuse(client, str(refusal))
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(client)
                if upstream is not None:
                    self._open.discard(upstream)
            client.close()
            if upstream is not None:
                upstream.close()

    def _refuse(self, client: socket.socket, reason: str) -> None:
        with self._lock:
            self.refused_count += 1
            keep = len(self.refused) < MAX_REASONS  # an agent may retry without end
            if keep:
                self.refused.append(reason)
        if keep:
            log.warning("session egress refused", session=self.session, reason=reason)
        body = f"ballet: egress refused: {reason}\n".encode()
        with contextlib.suppress(OSError):
            client.sendall(
                b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    """The request head, and whatever the client already sent after it."""
    client.settimeout(HEAD_TIMEOUT_SECONDS)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(4096)
        if not chunk:
            raise OSError("the client closed before its request")
        data += chunk
        if len(data) > MAX_HEAD_BYTES:
            raise Refused("the request head is too long")
    head, _, early = data.partition(b"\r\n\r\n")
    client.settimeout(None)
    return head + b"\r\n\r\n", early


# A plain-HTTP request is forwarded alone: the proxy rewrites only its first line,
# so the connection must not carry a second (in absolute form, to maybe another host).
_HOP_BY_HOP = ("connection:", "keep-alive:", "proxy-connection:", "proxy-authorization:")


def _parse_head(head: bytes) -> tuple[str, str, bytes]:
    """(method, target, the head to send upstream for a plain-HTTP request: origin-form,
    `Connection: close`, so the client opens a new connection for its next request)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise Refused(f"not an HTTP proxy request: {lines[0][:200]!r}")
    method, target, version = parts
    if method == "CONNECT":
        return method, target, b""
    url = urlsplit(target)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [line for line in lines[1:] if line and not line.lower().startswith(_HOP_BY_HOP)]
    first = f"{method} {path} {version}"
    return method, target, "\r\n".join([first, *kept, "Connection: close", "", ""]).encode()


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


def _connect(host: str, port: int, rule: EgressRule) -> socket.socket:
    addresses = _resolve(host, port)
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
            upstream = socket.create_connection((address, port), CONNECT_TIMEOUT_SECONDS)
            upstream.settimeout(None)
            # Bytes go out as the agent wrote them. With Nagle's algorithm, a request
            # whose head and body (httpx writes them apart) reached the proxy in two
            # reads held its body until the server ACKed the head, which a server
            # waiting for the body delays: 40 ms here (bench/confinement.py, part 4).
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return upstream
        except OSError as error:
            last = error
    raise Refused(f"{host}:{port} is allowed but could not be reached: {last}")


def _resolve(host: str, port: int) -> list[str]:
    if ip_literal(host) is not None:
        return [host]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise Refused(f"{host} could not be resolved: {error}") from error
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _public(address: str) -> bool:
    literal = ip_literal(address)
    return literal is not None and is_public(literal)


def _splice(source: socket.socket, sink: socket.socket) -> None:
    """Copy until `source` ends, kernel to kernel, then half-close `sink`."""
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError):  # fewer, larger splices (capped by pipe-max-size)
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, CHUNK)
    try:
        while count := os.splice(source.fileno(), write_end, CHUNK):
            while count:
                count -= os.splice(read_end, sink.fileno(), count)
    except OSError:
        pass
    finally:
        os.close(read_end)
        os.close(write_end)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def policy_for(
    operator: Iterable[EgressRule],
    public: Iterable[EgressRule],
    blocked_hosts: Iterable[str] = (),
) -> EgressPolicy:
    """The operator's rules first (trusted), then the runtime's and repository's."""
    return EgressPolicy(
        rules=(*operator, *public), blocked_hosts=frozenset(h.lower() for h in blocked_hosts)
    )
