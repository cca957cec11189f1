"""A confined session, tried as an attacker would: what it can and cannot see, reach
and leave behind. Real bubblewrap, real proxy, real processes."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from ballet.core.config import Runtime
from ballet.core.egress import parse_rule
from ballet.sessions import SessionOptions, Workspaces
from ballet.sessions.confine.proxy import MAX_OPEN_SOCKETS, MAX_REASONS, EgressPolicy, EgressProxy
from git_repos import git, remote_refs
from process_namespaces import namespace_ends, record_namespace
from session_helpers import COMMIT_AND_REPORT, MakeSpec, WriteScript, run

REPORT = """
json.dump({"outcome": "done", "summary": "probed"}, open(os.environ["BALLET_REPORT"], "w"))
"""


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from the allowed service"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def http_service() -> Iterator[int]:
    """An HTTP server on a loopback port this test started; yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def listening_port() -> Iterator[int]:
    """A TCP port that accepts connections (standing in for Redis or Ballet's web port)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


PROBE = """
import json, os, socket, urllib.request, urllib.error
found = {}

def attempt(name, action):
    try:
        found[name] = ["ok", action()]
    except Exception as error:
        found[name] = ["refused", f"{type(error).__name__}: {error}"[:300]]

def through_proxy(url):
    return urllib.request.urlopen(url, timeout=10).read().decode()

def direct(port):
    with socket.create_connection(("127.0.0.1", port), timeout=3):
        return "connected"

def connect_via_proxy(target):
    host, port = os.environ["HTTPS_PROXY"].rsplit("/", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
        reply = sock.recv(4096).decode(errors="replace")
    if not reply.startswith("HTTP/1.1 200"):
        raise PermissionError(reply.splitlines()[0])
    return "tunnel open"

ports = json.loads(os.environ["PROBE_PORTS"])
attempt("allowed_via_proxy", lambda: through_proxy(f"http://127.0.0.1:{ports['allowed']}/"))
attempt("allowed_direct", lambda: urllib.request.build_opener(urllib.request.ProxyHandler({}))
        .open(f"http://127.0.0.1:{ports['allowed']}/", timeout=5).read().decode())
attempt("unlisted_host", lambda: connect_via_proxy("example.com:443"))
attempt("redis_via_proxy", lambda: connect_via_proxy(f"127.0.0.1:{ports['redis']}"))
attempt("redis_direct", lambda: direct(ports["redis"]))
attempt("web_via_proxy", lambda: through_proxy(f"http://127.0.0.1:{ports['web']}/"))
attempt("web_direct", lambda: direct(ports["web"]))
attempt("github_api_via_proxy", lambda: connect_via_proxy("api.github.com:443"))
attempt("public_ip_direct", lambda: socket.create_connection(("1.1.1.1", 443), timeout=3))
attempt("secret_file", lambda: open(os.environ["PROBE_SECRET"]).read())
attempt("secret_dir", lambda: os.listdir(os.path.dirname(os.environ["PROBE_SECRET"])))
attempt("other_workspace", lambda: open(os.environ["PROBE_OTHER"]).read())
attempt("sessions_listed", lambda: os.listdir(os.environ["PROBE_WORKSPACES"] + "/sessions"))
attempt("write_outside", lambda: open("/usr/ballet-was-here", "w").write("x"))
attempt("write_mirror", lambda: open(os.environ["PROBE_MIRROR"] + "/objects/x", "w").write("x"))
attempt("other_processes", lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
attempt("nested_userns", lambda: os.unshare(os.CLONE_NEWUSER) or "unshared")
open(os.environ["PROBE_OUT"], "w").write(json.dumps(found))
"""


def test_a_confined_session_reaches_only_what_is_allowed(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    observed: Path,
    tmp_path: Path,
) -> None:
    secret = tmp_path / "data" / "webhook-secret"
    secret.parent.mkdir()
    secret.write_text("whsec-do-not-leak")
    out = observed / "found.json"
    other = workspaces.root / "sessions" / "acme_other_7" / "repo" / "planted.txt"
    other.parent.mkdir(parents=True)
    other.write_text("another ticket's work")
    write_script("agent", PROBE + "import json, os\n" + REPORT)
    with http_service() as allowed, listening_port() as redis, listening_port() as web:
        isolation = replace(
            options.isolation,
            egress_allow=(parse_rule(f"127.0.0.1:{allowed}", trusted=True),),
            hidden_paths=(secret.parent,),
            blocked_hosts=frozenset({"api.github.com"}),
        )
        env = {
            **parent_env,
            "PROBE_PORTS": json.dumps({"allowed": allowed, "redis": redis, "web": web}),
            "PROBE_SECRET": str(secret),
            "PROBE_WORKSPACES": str(workspaces.root),
            "PROBE_OTHER": str(other),
            "PROBE_MIRROR": str(workspaces.mirror_path("octo/demo")),
            "PROBE_OUT": str(out),
        }
        runtime = Runtime(
            adapter="command",
            command=("agent",),
            env=tuple(n for n in env if n.startswith("PROBE_")),
        )
        result = run(
            make_spec(runtime=runtime), workspaces, env, replace(options, isolation=isolation)
        )
    assert result.failure_reason is None, result.report.summary
    found = json.loads(out.read_text())
    assert found["allowed_via_proxy"] == ["ok", "hello from the allowed service"]
    assert found["allowed_direct"] == ["ok", "hello from the allowed service"]
    refused = {name for name, (verdict, _) in found.items() if verdict == "refused"}
    assert refused == {
        "unlisted_host", "redis_via_proxy", "redis_direct", "web_via_proxy", "web_direct",
        "github_api_via_proxy", "public_ip_direct", "secret_file", "secret_dir", "other_workspace",
        "write_outside", "write_mirror", "nested_userns",
    }, found  # fmt: skip
    # Only the way down to its own directories, not the other ticket's.
    assert len(found["sessions_listed"][1]) == 1 and "other" not in found["sessions_listed"][1][0]
    assert "403" in found["unlisted_host"][1] and "403" in found["github_api_via_proxy"][1]
    # Its own pid namespace: the relay and the agent, never the worker.
    assert found["other_processes"][0] == "ok" and max(found["other_processes"][1]) < 20
    assert result.egress_refused >= 3 and result.egress_allowed >= 1
    assert "egress refused" in result.output_tail and "example.com:443" in result.output_tail


def test_nothing_a_session_started_outlives_it(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    observed: Path,
) -> None:
    namespace = observed / "namespace"
    write_script(
        "agent",
        "import json, os, subprocess\n"
        "subprocess.Popen(['setsid', 'sh', '-c', 'sleep 300 & sleep 300'])\n"
        "if os.fork() == 0:\n    os.setsid()\n    os.execvp('sleep', ['sleep', '300'])\n"
        + record_namespace(namespace)
        + REPORT,
    )
    result = run(make_spec(), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    assert namespace_ends(namespace.read_text())


HOSTILE_GIT = (
    """
import json, os, subprocess
marker = os.environ["MARKER"]
hook = f"#!/bin/sh\\necho pwned > {marker}-$(basename $0)\\n"
hooks = ("pre-push", "post-checkout", "reference-transaction", "pre-auto-gc", "post-index-change")
for name in hooks:
    path = f".git/hooks/{name}"
    open(path, "w").write(hook)
    os.chmod(path, 0o755)
def config(*a): subprocess.run(["git", "config", *a], check=True)
config("core.fsmonitor", f"echo pwned > {marker}-fsmonitor")
config("core.hooksPath", ".git/hooks")
config("url.file:///nowhere/.insteadOf", os.environ["ORIGIN"])
config("remote.origin.url", "file:///nowhere")
open(".git/objects/info/alternates", "a").write("/nonexistent/objects\\n")
"""
    + COMMIT_AND_REPORT
)


def test_ballet_git_runs_nothing_the_session_wrote(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    origin: Path,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "pwned"
    write_script("agent", HOSTILE_GIT)
    env = {**parent_env, "MARKER": str(marker), "ORIGIN": origin.as_uri()}
    spec = make_spec(
        runtime=Runtime(adapter="command", command=("agent",), env=("MARKER", "ORIGIN"))
    )
    result = run(spec, workspaces, env, options)
    assert result.failure_reason is None, result.report.summary
    assert remote_refs(origin)["refs/heads/ballet/7-greeting"] == result.head_sha
    assert git("show", "-s", "--format=%s", str(result.head_sha), cwd=origin) == "Greet"
    assert not list(tmp_path.glob("pwned*"))


def test_a_link_out_of_the_object_store_is_never_pushed(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
    origin: Path,
) -> None:
    write_script(
        "agent",
        COMMIT_AND_REPORT + "os.symlink('/etc/passwd', '.git/objects/borrowed')\n",
    )
    result = run(make_spec(), workspaces, parent_env, options)
    assert result.failure_reason == "push"
    assert "symbolic link" in result.report.summary
    assert "refs/heads/ballet/7-greeting" not in remote_refs(origin)


@pytest.mark.parametrize(
    "unsafe",
    ["127.0.0.1", "10.1.2.3:443", "169.254.169.254", "[::1]:8080", "localhost", "db.internal"],
)
def test_a_repository_cannot_open_a_local_or_private_destination(unsafe: str) -> None:
    with pytest.raises(ValueError, match="operator can"):
        Runtime(adapter="command", command=("x",), egress=(unsafe,))
    assert parse_rule(unsafe, trusted=True).trusted  # the operator may


def test_a_session_cannot_starve_the_worker_of_threads(tmp_path: Path) -> None:
    async def scenario() -> bytes:
        proxy = EgressProxy(EgressPolicy(rules=()), tmp_path / "proxy.sock", "s")
        await proxy.start()
        idle = []
        try:
            for _ in range(MAX_OPEN_SOCKETS):  # connections that never send a request
                sock = socket.socket(socket.AF_UNIX)
                sock.connect(str(tmp_path / "proxy.sock"))
                idle.append(sock)
            await asyncio.sleep(0.5)
            one_more = socket.socket(socket.AF_UNIX)
            one_more.connect(str(tmp_path / "proxy.sock"))
            one_more.settimeout(10)
            return await asyncio.to_thread(one_more.recv, 4096)
        finally:
            for sock in idle:
                sock.close()
            await proxy.aclose()

    answer = asyncio.run(scenario())
    assert answer.startswith(b"HTTP/1.1 403") and b"too many connections" in answer


def test_refusals_are_all_counted_but_only_the_first_kept(tmp_path: Path) -> None:
    async def scenario() -> EgressProxy:
        proxy = EgressProxy(EgressPolicy(rules=()), tmp_path / "proxy.sock", "s")
        await proxy.start()

        def ask(n: int) -> bytes:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(str(tmp_path / "proxy.sock"))
                sock.sendall(f"CONNECT host{n}.example:443 HTTP/1.1\r\n\r\n".encode())
                return sock.recv(4096)

        for n in range(MAX_REASONS + 10):
            assert (await asyncio.to_thread(ask, n)).startswith(b"HTTP/1.1 403")
        await proxy.aclose()
        return proxy

    proxy = asyncio.run(scenario())
    assert proxy.refused_count == MAX_REASONS + 10
    assert len(proxy.refused) == MAX_REASONS  # an agent retrying forever costs no memory


def test_a_tunnel_passes_the_agents_bytes_on_as_written(tmp_path: Path) -> None:
    # httpx writes a request's head, then its body. With Nagle's algorithm on the
    # proxy's upstream socket, a body that reached the proxy after the head waited
    # for the server's delayed ACK of it, 40 ms: a third of the requests of a client
    # on the proxy's socket, 2-4 in 285 through the relay (bench/confinement.py,
    # part 4). The socket is the proxy's own, found by the port the server saw.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        rule = parse_rule(f"127.0.0.1:{port}", trusted=True)

        async def scenario() -> int:
            proxy = EgressProxy(EgressPolicy(rules=(rule,)), tmp_path / "proxy.sock", "s")
            await proxy.start()
            try:
                with socket.socket(socket.AF_UNIX) as agent:
                    agent.connect(str(tmp_path / "proxy.sock"))
                    agent.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
                    assert (await asyncio.to_thread(agent.recv, 4096)).startswith(b"HTTP/1.1 200")
                    server_side, (_, from_port) = listener.accept()
                    with server_side:
                        return _nodelay_of_socket_from(from_port)
            finally:
                await proxy.aclose()

        assert asyncio.run(scenario()) != 0


def _nodelay_of_socket_from(local_port: int) -> int:
    """TCP_NODELAY of this process's socket bound to 127.0.0.1:`local_port`."""
    for fd in (int(name) for name in os.listdir("/proc/self/fd")):
        try:
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue  # not a socket
        with sock:
            if sock.family == socket.AF_INET and sock.getsockname()[1] == local_port:
                return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    raise AssertionError(f"no socket of this process is bound to port {local_port}")
