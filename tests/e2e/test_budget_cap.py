"""A ticket's cost cap on the sandbox, through the worker's model gateway: a `command`
runtime's session asks the scripted model server (the gateway's Anthropic upstream)
twice; the first answer (about $0.02) spends past the ticket's $0.01 cap, so the second request is
refused, the session ends `budget` and the ticket asks a person, naming the cap and
what was spent. A writer's `/ballet budget +5` raises the cap and `/ballet retry` runs
the stage again, whose requests now go through; the ticket ends done."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack, running_stack
from model_server import ModelServer
from scenarios import (
    comment,
    e2e_redis,
    lands_alone,
    outcomes,
    replied_to,
    replies_to,
    status_is,
    ticket,
    wait_until,
    waiting_for,
)

pytestmark = pytest.mark.anyio

KEY = "E2E_MODEL_KEY"
REAL_KEY = "sk-ant-e2e-real-key-never-in-a-session"

# The session's agent: two Messages requests through its gateway, with the token it holds.
ASK = """\
import http.client, json, os, urllib.parse
gateway = urllib.parse.urlsplit(os.environ["BALLET_GATEWAY_URL"])
def ask():
    connection = http.client.HTTPConnection(gateway.hostname, gateway.port, timeout=30)
    body = {"model": "claude-opus-4-1", "max_tokens": 5,
            "messages": [{"role": "user", "content": "hi"}]}
    connection.request("POST", "/anthropic/v1/messages", body=json.dumps(body),
                       headers={"content-type": "application/json",
                                "x-api-key": os.environ["E2E_MODEL_KEY"]})
    answer = connection.getresponse()
    answer.read()
    return answer.status
statuses = [ask(), ask()]
report = {"outcome": "done", "summary": f"asked twice: {statuses}"}
json.dump(report, open(os.environ["BALLET_REPORT"], "w"))
"""

BALLET_YML = f"""\
trigger_label: ballet
runtimes:
  asker: {{adapter: command, command: [python3, .ballet/ask.py], keys: [{{{KEY}: anthropic}}]}}
default_runtime: asker
pipelines:
  default:
    branch: null
    budget: {{cost_usd: 0.01}}
    stages:
      - {{id: implement, kind: agent, timeout_minutes: 5, next: {{done: $done}}}}
"""


@pytest.fixture
async def stack(
    redis_url: str, tmp_path: Path, model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Stack]:
    """The stack, its gateway's Anthropic upstream the model server on loopback, and the
    provider key in the worker's environment, as an operator sets them."""
    monkeypatch.setenv(KEY, REAL_KEY)
    url = await e2e_redis(redis_url)
    upstreams = f"anthropic={model_server.url}"
    async with running_stack(tmp_path, redis_url=url, provider_upstreams=upstreams) as running:
        yield running


async def test_a_ticket_cap_stops_the_session_and_a_writer_lets_it_go_on(
    stack: Stack, model_server: ModelServer
) -> None:
    request = demo.new_repo_request("capped", ballet_yml=lands_alone(BALLET_YML))
    files = request["files"]
    assert isinstance(files, dict)
    files[".ballet/ask.py"] = ASK
    repo = (await stack.create_repo(request))["full_name"]
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, waiting_for("question"), timeout=60)
    record = view.record
    assert record is not None and record.waiting is not None
    assert outcomes(view) == [("implement", 1, "budget")]
    assert len(model_server.served) == 1  # the second request never left the gateway
    assert {r["headers"].get("x-api-key") for r in model_server.requests} == {REAL_KEY}
    implement = record.history[0]
    assert implement.spend is not None and implement.spend.requests == 1
    assert implement.spend.cost_usd > 0 and record.cost_used == implement.spend.cost_usd
    said = record.waiting.reason
    assert "this ticket's cost cap ($0.01) is reached: $0.02 spent" in said
    assert "`/ballet budget +5` raises this ticket's cap by $5, then `/ballet retry`" in said
    question = [c["body"] for c in view.comments_on(number) if "needs an answer" in c["body"]]
    assert question and "this ticket's cost cap" in question[-1]

    raised = await comment(stack, repo, number, demo.AUTHOR, "/ballet budget +5")
    view = await wait_until(stack, repo, number, replied_to(raised["id"]), timeout=30)
    (reply,) = replies_to(view, raised["id"])
    assert "raised this ticket's cost cap by $5.00 to $5.01" in reply
    assert "`/ballet retry` runs the stage again" in reply

    await comment(stack, repo, number, demo.AUTHOR, "/ballet retry")
    view = await wait_until(stack, repo, number, status_is("done"), timeout=60)
    assert [o for _, _, o in outcomes(view)] == ["budget", "done"]
    assert len(model_server.served) == 3
    assert view.record is not None
    last = view.record.history[-1]
    assert last.summary == "asked twice: [200, 200]"
    report = json.dumps(last.model_dump(mode="json"))
    assert REAL_KEY not in report
