"""The first process inside a confined session: network relays, then the agent.

Run by bubblewrap as `python -I -S relay.py SOCKET PROXY_PORT [PORT=HOST:PORT ...]
-- ARGV...`. It starts before every session, so it imports only what the
interpreter has already loaded or builds in (`_socket`, `_thread`: `socket`,
`threading`, `json` and `signal` would each cost milliseconds of start-up).

The sandbox has its own network namespace with nothing but loopback, so this
is the session's only way out:
- `127.0.0.1:PROXY_PORT` relays bytes to Ballet's egress proxy (SOCKET, a unix
  socket bound into the sandbox), which speaks HTTP proxy (CONNECT and
  absolute-URI requests): HTTPS_PROXY/HTTP_PROXY point here;
- each `PORT=HOST:PORT` listens on `127.0.0.1:PORT` and tunnels to HOST:PORT
  through a CONNECT, so a client that ignores proxy variables still reaches a
  loopback service the operator allowed (a local model server) where it expects;
- each `PORT=/PATH` listens on `127.0.0.1:PORT` and relays straight to the unix
  socket PATH: the session's model gateway, which speaks plain HTTP itself.

Every listener is bound before the agent starts (no race with its first
request). The agent is our child; when it exits we exit with its status, and
bubblewrap then ends the sandbox's pid namespace: nothing it started survives.
Bytes move with splice(2) through a pipe, never through Python.
"""

import _socket
import _thread
import fcntl
import os
import sys

CHUNK = 1 << 20
MAX_HEAD = 16 * 1024


def main(argv: list[str]) -> int:
    split = argv.index("--")
    proxy, proxy_port, *forwards = argv[1:split]
    command = argv[split + 1 :]
    listeners = [(_listen(int(proxy_port)), "")]
    for forward in forwards:
        port, _, target = forward.partition("=")
        listeners.append((_listen(int(port)), target))
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        except OSError as error:
            os.write(2, f"ballet: could not start {command[0]!r}: {error}\n".encode())
        os._exit(127)
    for listener, target in listeners:
        _thread.start_new_thread(_serve, (listener, proxy, target))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def _listen(port: int) -> "_socket.socket":
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    return listener


def _serve(listener: "_socket.socket", proxy: str, target: str) -> None:
    while True:
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # _socket has no accept()
        client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
        # Relayed bytes go out as they come: with Nagle's algorithm, an answer's body
        # waited for the agent's delayed ACK of its head, 40 ms on every request of a
        # kept-alive connection after the first.
        client.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        _thread.start_new_thread(_connect, (client, proxy, target))


def _connect(client: "_socket.socket", proxy: str, target: str) -> None:
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        early: bytes | None = b""
        if target.startswith("/"):  # a socket of its own: no CONNECT
            upstream.connect(target)
        else:
            upstream.connect(proxy)
            early = _tunnel(upstream, target) if target else b""
        if early is None:
            return
        client.sendall(early)
        done = _thread.allocate_lock()
        done.acquire()
        _thread.start_new_thread(_pipe, (upstream, client, done))
        _pipe(client, upstream, None)
        done.acquire()
    except OSError:
        pass
    finally:
        client.close()
        upstream.close()


def _tunnel(upstream: "_socket.socket", target: str) -> "bytes | None":
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


def _pipe(
    source: "_socket.socket", sink: "_socket.socket", done: "_thread.LockType | None"
) -> None:
    read_end, write_end = os.pipe()
    try:  # noqa: SIM105
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, CHUNK)  # fewer, larger splices
    except OSError:
        pass  # capped by /proc/sys/fs/pipe-max-size: smaller splices then
    try:
        while True:
            count = os.splice(source.fileno(), write_end, CHUNK)
            if not count:
                break
            while count:
                count -= os.splice(read_end, sink.fileno(), count)
    except OSError:
        pass
    finally:
        os.close(read_end)
        os.close(write_end)
        try:  # noqa: SIM105 (contextlib is one more import at every session's start)
            sink.shutdown(_socket.SHUT_WR)
        except OSError:
            pass
        if done is not None:
            done.release()


if __name__ == "__main__":
    # No interpreter shutdown: nothing is buffered (every write is os.write), and the
    # threads still relaying die with the sandbox anyway. It saves ~3 ms a session.
    os._exit(main(sys.argv))
