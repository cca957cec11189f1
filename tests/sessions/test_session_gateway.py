"""A confined session holds a token, never its provider key: a hostile session that
reads every variable and file it can finds no key, and the gateway refuses it
everything but its own token (no token, a forged one, another running session's)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
from pathlib import Path
from typing import Any

from ballet.core.config import Runtime
from ballet.sessions import SessionOptions, StageInfo, Workspaces, anonymous, run_session
from ballet.sessions.confine import Isolation
from ballet.sessions.gateway import ModelGateway
from model_server import ModelServer
from session_helpers import MakeSpec, WriteScript

REQUEST = """
def ask(headers):
    url = urllib.parse.urlsplit(os.environ["BALLET_GATEWAY_URL"])
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": []})
    connection.request("POST", "/anthropic/v1/messages", body=body,
                       headers={"content-type": "application/json", **headers})
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read() or b"null")
"""

# Reads everything it can and tries the gateway every way it can think of.
HOSTILE = f"""
import http.client, json, os, re, sys, time, urllib.parse
observed = sys.argv[1]
{REQUEST}
pattern = re.compile(rb"sk-ant-[A-Za-z0-9_-]{{6,}}")
found, files = set(), 0
def scan(data):
    found.update(m.decode() for m in pattern.findall(data))
scan(open("/proc/self/environ", "rb").read())
for name in os.listdir("/proc"):
    for part in ("environ", "cmdline"):
        try:
            scan(open(f"/proc/{{name}}/{{part}}", "rb").read())
        except OSError:
            pass
for root, dirs, names in os.walk("/"):
    if root in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    for name in names:
        try:
            with open(os.path.join(root, name), "rb") as file:
                scan(file.read(1 << 16))
                files += 1
        except OSError:
            pass
own = os.environ["ANTHROPIC_API_KEY"]
peer_file = os.path.join(observed, "peer-token")
while not os.path.exists(peer_file):
    time.sleep(0.05)
peer = open(peer_file).read()
tries = {{
    "own": ask({{"x-api-key": own}}),
    "none": ask({{}}),
    "forged": ask({{"x-api-key": "sk-ant-" + "0" * 40}}),
    "peer": ask({{"x-api-key": peer}}),
    "peer_bearer": ask({{"authorization": "Bearer " + peer}}),
    "found": [ask({{"x-api-key": key}}) for key in sorted(found)],
}}
json.dump({{"found": sorted(found), "files": files, "tries": tries}},
          open(os.path.join(observed, "hostile.json"), "w"))
json.dump({{"outcome": "done", "summary": "looked around"}}, open(os.environ["BALLET_REPORT"], "w"))
"""

# Another session of the same worker, running meanwhile: its token is "leaked".
PEER = """
import json, os, sys, time
observed = sys.argv[1]
open(os.path.join(observed, "peer-token"), "w").write(os.environ["ANTHROPIC_API_KEY"])
while not os.path.exists(os.path.join(observed, "hostile.json")):
    time.sleep(0.05)
json.dump({"outcome": "done", "summary": "waited"}, open(os.environ["BALLET_REPORT"], "w"))
"""


class NoMeter:
    def meter(self, *args: Any) -> None:
        return None


def test_a_hostile_session_finds_no_key_and_no_other_token_works(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
    model_server: ModelServer,
) -> None:
    real = "sk-ant-REAL-" + secrets.token_hex(16)
    env = {**parent_env, "ANTHROPIC_API_KEY": real}
    write_script("hostile", HOSTILE)
    write_script("peer", PEER)

    def spec_of(program: str, stage: str) -> Any:
        runtime = Runtime(
            adapter="command", command=(program, str(observed)), keys=("ANTHROPIC_API_KEY",)
        )
        return make_spec(runtime=runtime, stage=StageInfo(id=stage), timeout_seconds=300)

    async def both() -> list[Any]:
        gateway = ModelGateway(NoMeter(), upstreams={"anthropic": model_server.url})
        with_gateway = dataclasses.replace(options, gateway=gateway)
        try:
            return await asyncio.gather(
                *(
                    run_session(
                        spec_of(program, stage),
                        workspaces=workspaces,
                        git_auth=anonymous,
                        parent_env=env,
                        options=with_gateway,
                    )
                    for program, stage in (("hostile", "implement"), ("peer", "review"))
                )
            )
        finally:
            await gateway.aclose()

    hostile, peer = asyncio.run(both())
    assert hostile.failure_reason is None, hostile.report.summary + hostile.output_tail
    assert peer.failure_reason is None, peer.report.summary + peer.output_tail
    seen = json.loads((observed / "hostile.json").read_text())
    assert seen["files"] > 1000, "the session read little: the search proves nothing"
    assert real not in json.dumps(seen)
    tries = seen["tries"]
    assert tries["own"][0] == 200, tries["own"]  # its own token works...
    for name in ("none", "forged", "peer", "peer_bearer"):  # ...and nothing else does
        status, body = tries[name]
        assert status == 401, (name, tries[name])
        assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
    assert all(status == 401 for status, _ in tries["found"])
    # The provider saw the real key, once: for the session's own token.
    assert [r["headers"].get("x-api-key") for r in model_server.requests] == [real]
    assert hostile.spend is not None and hostile.spend.requests == 0  # unmetered here


UNCONFINED = f"""
import http.client, json, os, sys, urllib.parse
{REQUEST}
status, _ = ask({{"x-api-key": os.environ["ANTHROPIC_API_KEY"]}})
json.dump({{"status": status, "env": dict(os.environ)}},
          open(os.path.join(sys.argv[1], "unconfined.json"), "w"))
json.dump({{"outcome": "done", "summary": "asked"}}, open(os.environ["BALLET_REPORT"], "w"))
"""


def test_an_unconfined_session_reaches_its_gateway_on_a_loopback_port(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    observed: Path,
    model_server: ModelServer,
) -> None:
    real = "sk-ant-REAL-" + secrets.token_hex(16)
    write_script("unconfined", UNCONFINED)
    runtime = Runtime(
        adapter="command", command=("unconfined", str(observed)), keys=("ANTHROPIC_API_KEY",)
    )
    gateway = ModelGateway(NoMeter(), upstreams={"anthropic": model_server.url})
    options = SessionOptions(isolation=Isolation(mode="none"), gateway=gateway)
    result = asyncio.run(
        run_session(
            make_spec(runtime=runtime),
            workspaces=workspaces,
            git_auth=anonymous,
            parent_env={**parent_env, "ANTHROPIC_API_KEY": real},
            options=options,
        )
    )
    assert result.failure_reason is None, result.report.summary + result.output_tail
    seen = json.loads((observed / "unconfined.json").read_text())
    assert seen["status"] == 200
    assert real not in json.dumps(seen["env"])
    assert seen["env"]["BALLET_GATEWAY_URL"].startswith("http://127.0.0.1:")
    assert [r["headers"].get("x-api-key") for r in model_server.requests] == [real]
