"""Watching a session, end to end on the sandbox: a ticket of a private
repository whose agent prints a unique marker and its declared secret.

Its stage's check run links the session's page on Ballet and shows the end of
its log (the marker, not the secret); the page shows nothing to a passer-by or
to a signed-in user without access, and the marker without the secret to a
collaborator who may only read.
"""

from __future__ import annotations

import gzip
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack, running_stack
from ballet.demo.watch import View
from ballet.queue import connect
from scenarios import e2e_redis, lands_alone, merged, ticket, wait_until

pytestmark = pytest.mark.anyio

MARKER = "MARKER-" + secrets.token_hex(8)
SECRET = "sk-planted-" + secrets.token_hex(20)
LOUD = f"""\
import os, subprocess, sys

print("{MARKER} the agent starts, holding", os.environ["PLANTED_KEY"], flush=True)
print("on stderr too:", os.environ["PLANTED_KEY"], file=sys.stderr, flush=True)
sys.exit(subprocess.run([sys.executable, ".ballet/agent.py"], check=False).returncode)
"""
YML = demo.BALLET_YML.replace(
    "runtimes:\n",
    "runtimes:\n"
    "  loud: {adapter: command, command: [python3, .ballet/loud_agent.py], env: [PLANTED_KEY]}\n",
).replace("- {id: implement, kind: agent,", "- {id: implement, kind: agent, runtime: loud,")


@pytest.fixture
async def planted_stack(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Stack]:
    # The worker's environment holds the runtime's declared secret, as a deployment's would.
    monkeypatch.setenv("PLANTED_KEY", SECRET)
    async with running_stack(tmp_path, redis_url=await e2e_redis(redis_url)) as running:
        yield running


async def value_of(pool: Any, key: bytes) -> bytes:
    """A key's whole value, read by its type (DUMP may compress it)."""
    kind = (await pool.type(key)).decode()
    reads = {
        "string": lambda: pool.get(key),
        "list": lambda: pool.lrange(key, 0, -1),
        "hash": lambda: pool.hgetall(key),
        "set": lambda: pool.smembers(key),
        "zset": lambda: pool.zrange(key, 0, -1),
        "stream": lambda: pool.xrange(key),
    }
    return repr(await reads[kind]()).encode() if kind in reads else b""


async def sign_in(stack: Stack, login: str, path: str) -> httpx.AsyncClient:
    """A browser signed in to Ballet as `login` through the sandbox's OAuth."""
    browser = httpx.AsyncClient(base_url=stack.web_url, timeout=30)
    start = await browser.get("/login", params={"next": path})
    assert start.status_code == 302, start.text
    async with stack.user(login) as github:  # signed in to "GitHub" as `login`
        back = await github.get(start.headers["location"])
    assert back.status_code == 302, back.text
    done = await browser.get(back.headers["location"])
    assert done.status_code == 303 and done.headers["location"] == path, done.text
    return browser


async def test_a_private_sessions_log_reaches_only_those_who_may_read_it(
    planted_stack: Stack,
) -> None:
    stack = planted_stack
    request = demo.new_repo_request("secretive", ballet_yml=lands_alone(YML))
    request["private"] = True
    request["collaborators"] = {demo.AUTHOR: "write", "bob": "read", "carol": "admin"}
    files = request["files"]
    assert isinstance(files, dict)
    files[".ballet/loud_agent.py"] = LOUD
    repo = (await stack.create_repo(request))["full_name"]
    number = await ticket(stack, repo)
    view: View = await wait_until(stack, repo, number, merged, timeout=120)

    # The check run of implement links the session's page and shows its log's end.
    (check,) = [
        r
        for r in view.state["check_runs"]
        if r["name"] == "ballet/implement" and r["status"] == "completed"
    ]
    url = check["details_url"]
    path = f"/tickets/{repo}/{number}/sessions/implement/1/1"
    assert url == stack.web_url + path
    text = check["output"]["text"]
    assert MARKER in text and SECRET not in text
    assert "[redacted:PLANTED_KEY]" in text

    # Nowhere on GitHub: comments, check runs, the pushed branch's files.
    assert SECRET not in repr(view.state)

    async with httpx.AsyncClient(base_url=stack.web_url, timeout=30) as passer_by:
        page = await passer_by.get(path)
    assert page.status_code in (302, 303, 404) and MARKER not in page.text
    outsider = await sign_in(stack, "mallory", path)
    page = await outsider.get(path)
    raw = await outsider.get(path + "/log.txt")
    await outsider.aclose()
    assert page.status_code == 404 and MARKER not in page.text
    assert raw.status_code == 404 and MARKER not in raw.text
    reader = await sign_in(stack, "bob", path)
    page = await reader.get(path)
    raw = await reader.get(path + "/log.txt")
    await reader.aclose()
    assert page.status_code == 200 and MARKER in page.text and SECRET not in page.text
    assert raw.status_code == 200 and MARKER in raw.text and SECRET not in raw.text
    assert "Cancel" not in page.text  # a reader gets no buttons


PLANTER = f"""\
import json, os, subprocess, sys

key = os.environ["PLANTED_KEY"]
print("{MARKER} printing", key, flush=True)
with open("config.py", "w") as f:  # a commit that carries it
    f.write(f"API_KEY = {{key!r}}\\n")
subprocess.run(["git", "add", "config.py"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "add config " + key], check=True)
with open(os.environ["BALLET_REPORT"], "w") as f:  # and a report that names it
    json.dump({{"outcome": "done", "summary": "the key is " + key, "details": key}}, f)
"""


async def test_a_planted_secret_is_in_no_store_page_comment_check_or_branch(
    planted_stack: Stack, redis_url: str
) -> None:
    stack = planted_stack
    yml = YML.replace(".ballet/loud_agent.py", ".ballet/planter.py")
    request = demo.new_repo_request("planted", ballet_yml=lands_alone(yml))
    request["private"] = True
    files = request["files"]
    assert isinstance(files, dict)
    files[".ballet/planter.py"] = PLANTER
    created = await stack.create_repo(request)
    repo = created["full_name"]
    number = await ticket(stack, repo)

    def asked(v: View) -> bool:
        return v.record is not None and v.record.status == "waiting"

    view = await wait_until(stack, repo, number, asked, timeout=120)
    assert view.record is not None
    (run,) = view.record.history
    assert run.outcome == "failed" and "PLANTED_KEY" in run.summary
    # The push was refused: the branch is still on the commit Ballet opened it on.
    assert view.state["branches"][view.record.branch or ""] == view.record.seed_sha
    assert SECRET not in repr(view.state)  # comments, check runs, labels, the PR
    # Redis (records, artifacts, the live tail) and the log store hold none of it.
    url = stack.settings.redis_url
    assert url is not None
    pool = await connect(url.get_secret_value())
    try:
        for key in await pool.keys("*"):
            assert SECRET.encode() not in await value_of(pool, key), key
    finally:
        await pool.aclose()
    stored = [p for p in (stack.settings.data_dir / "logs").rglob("*") if p.is_file()]
    assert stored
    for path in stored:
        data = path.read_bytes()
        plain = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        assert SECRET.encode() not in plain, path
    reader = await sign_in(stack, demo.AUTHOR, f"/tickets/{repo}/{number}")
    for page_path in (
        f"/tickets/{repo}/{number}",
        f"/tickets/{repo}/{number}/sessions/implement/1/1",
        f"/tickets/{repo}/{number}/sessions/implement/1/1/log.txt",
    ):
        page = await reader.get(page_path)
        assert page.status_code == 200 and SECRET not in page.text, page_path
    assert MARKER in page.text
    await reader.aclose()
