"""The first process inside a confined session: network relays, then the agent.

Run by bubblewrap as `python -I -S relay.py SPEC -- ARGV...`, so it imports
only the standard library (nothing of Ballet's, no site-packages). SPEC is
JSON: `{"socket": path of Ballet's egress proxy (a unix socket bound into the
sandbox), "proxy_port": n, "forwards": [[port, "host:port"], ...]}`.

The sandbox has its own network namespace with nothing but loopback, so this
is the session's only way out:
- `127.0.0.1:proxy_port` relays bytes to the egress proxy, which speaks HTTP
  proxy (CONNECT and absolute-URI requests): HTTPS_PROXY/HTTP_PROXY point here;
- each forward listens on `127.0.0.1:port` and tunnels to `host:port` through
  a CONNECT, so a client that ignores proxy variables still reaches a loopback
  service the operator allowed (a local model server) at its usual address.

Every listener is bound before the agent starts (no race with its first
request). The agent is our child; when it exits we exit with its status, and
bubblewrap then ends the sandbox's pid namespace: nothing it started survives.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading

CHUNK = 256 * 1024
MAX_HEAD = 16 * 1024


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    command = argv[argv.index("--") + 1 :]
    listeners: list[tuple[socket.socket, str | None]] = [
        (_listen(spec["proxy_port"]), None),
        *((_listen(port), target) for port, target in spec["forwards"]),
    ]
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        except OSError as error:
            print(f"ballet: could not start {command[0]!r}: {error}", file=sys.stderr)
        os._exit(127)
    for listener, target in listeners:
        threading.Thread(
            target=_serve, args=(listener, spec["socket"], target), daemon=True
        ).start()
    # Signals meant for the session (a timeout's SIGTERM) go to the agent.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    return listener


def _serve(listener: socket.socket, proxy: str, target: str | None) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_connect, args=(client, proxy, target), daemon=True).start()


def _connect(client: socket.socket, proxy: str, target: str | None) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(proxy)
        early = b"" if target is None else _tunnel(upstream, target)
        if early is None:
            return
        client.sendall(early)
        back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        back.start()
        _pipe(client, upstream)
        back.join()
    except OSError:
        pass
    finally:
        client.close()
        upstream.close()


def _tunnel(upstream: socket.socket, target: str) -> bytes | None:
    """CONNECT through the proxy; the bytes past its reply, or None if refused."""
    upstream.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = upstream.recv(4096)
        if not data or len(head) > MAX_HEAD:
            return None
        head += data
    reply, _, early = head.partition(b"\r\n\r\n")
    return early if reply.split(b" ", 2)[1:2] == [b"200"] else None


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    buffer = memoryview(bytearray(CHUNK))
    try:
        while True:
            count = source.recv_into(buffer)
            if not count:
                break
            sink.sendall(buffer[:count])
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
