"""A ticket from label to merge with each real agent CLI: the CLI, run by the
worker against the scripted model server on loopback, does the Implement stage;
the record keeps the usage the server served."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from agent_clis import AIDER_BIN, NPM_BIN, require_cli
from ballet.demo.stack import Stack, running_stack
from model_server import ModelServer
from scenarios import (
    assert_merged_cleanly,
    e2e_redis,
    merged,
    new_repo,
    outcomes,
    ticket,
    wait_until,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
async def stack(redis_url: str, tmp_path: Path, model_server: ModelServer) -> AsyncIterator[Stack]:
    """The e2e stack, its operator allowing sessions the model server on loopback
    (BALLET_SESSION_EGRESS_ALLOW): the sessions run confined as in production."""
    url = await e2e_redis(redis_url)
    port = urlsplit(model_server.url).port
    async with running_stack(
        tmp_path, redis_url=url, session_egress_allow=(f"127.0.0.1:{port}",)
    ) as running:
        yield running


# adapter, executable, model, key, what base_url adds to the server's address, priced:
# the model gateway prices every answer of a model with a known price, whatever the CLI.
CASES = [
    ("claude-code", "claude", "claude-sonnet-4-5", "ANTHROPIC_API_KEY", "", True),
    ("codex", "codex", "gpt-5.1-codex", "OPENAI_API_KEY", "/v1", True),
    ("gemini", "gemini", "gemini-2.5-pro", "GEMINI_API_KEY", "", True),
    ("opencode", "opencode", "ballet/fake-model", "OPENAI_API_KEY", "/v1", False),
    ("aider", "aider", "openai/gpt-4.1", "OPENAI_API_KEY", "/v1", True),
]


@pytest.mark.parametrize(
    ("adapter", "executable", "model", "key", "path", "priced"), CASES, ids=[c[0] for c in CASES]
)
async def test_a_real_cli_session_takes_a_ticket_to_merged(
    stack: Stack,
    model_server: ModelServer,
    monkeypatch: pytest.MonkeyPatch,
    adapter: str,
    executable: str,
    model: str,
    key: str,
    path: str,
    priced: bool,
) -> None:
    require_cli(executable)
    # The worker's environment, as an operator sets it: the CLIs on PATH, the key.
    monkeypatch.setenv("PATH", f"{NPM_BIN}:{AIDER_BIN}:{os.environ['PATH']}")
    monkeypatch.setenv(key, "key-for-e2e")
    ballet_yml = f"""\
trigger_label: ballet
runtimes:
  agent: {{adapter: {adapter}, model: {model}, env: [{key}],
          base_url: "{model_server.url}{path}"}}
default_runtime: agent
pipelines:
  default:
    stages:
      - {{id: implement, kind: agent, skills: [implementer], timeout_minutes: 5,
         next: {{done: integrate}}}}
      - {{id: integrate, kind: platform, action: merge,
         next: {{merged: $done, returned: implement}}}}
"""
    repo = await new_repo(stack, f"real-{executable}", ballet_yml=ballet_yml)
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, merged, timeout=150)

    assert outcomes(view) == [("implement", 1, "done"), ("integrate", 1, "merged")]
    await assert_merged_cleanly(stack, view, repo, number)
    assert view.record is not None
    implement = view.record.history[0]
    served_in, served_out = model_server.total()
    assert (implement.usage.input_tokens, implement.usage.output_tokens) == (
        served_in,
        served_out,
    )
    assert (implement.usage.cost_usd > 0) == priced
