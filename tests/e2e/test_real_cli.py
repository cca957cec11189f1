"""A ticket from label to merge with a real agent CLI: Claude Code, run by the
worker against the scripted model server on loopback, does the Implement stage;
the record keeps the usage the server served."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from agent_clis import AIDER_BIN, NPM_BIN, require_cli
from ballet.demo.stack import Stack
from model_server import ModelServer, serve
from scenarios import assert_merged_cleanly, merged, new_repo, outcomes, ticket, wait_until

pytestmark = pytest.mark.anyio


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    server = ModelServer()
    stop = serve(server)
    try:
        yield server
    finally:
        stop()


async def test_a_real_claude_code_session_takes_a_ticket_to_merged(
    stack: Stack, model_server: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_cli("claude")
    # The worker's environment, as an operator sets it: the CLIs on PATH, the key.
    monkeypatch.setenv("PATH", f"{NPM_BIN}:{AIDER_BIN}:{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-e2e")
    ballet_yml = f"""\
trigger_label: ballet
runtimes:
  claude: {{adapter: claude-code, model: claude-sonnet-4-5, env: [ANTHROPIC_API_KEY],
           base_url: "{model_server.url}"}}
default_runtime: claude
pipelines:
  default:
    stages:
      - {{id: implement, kind: agent, skills: [implementer], timeout_minutes: 5,
         next: {{done: integrate}}}}
      - {{id: integrate, kind: platform, action: merge,
         next: {{merged: $done, returned: implement}}}}
"""
    repo = await new_repo(stack, "real-claude", ballet_yml=ballet_yml)
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, merged, timeout=120)

    assert outcomes(view) == [("implement", 1, "done"), ("integrate", 1, "merged")]
    await assert_merged_cleanly(stack, view, repo, number)
    assert view.record is not None
    implement = view.record.history[0]
    served_in, served_out = model_server.total()
    assert (implement.usage.input_tokens, implement.usage.output_tokens) == (
        served_in,
        served_out,
    )
    assert implement.usage.cost_usd > 0
