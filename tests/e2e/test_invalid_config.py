"""An invalid `.ballet.yml` is answered with an error comment; no ticket starts."""

from __future__ import annotations

import anyio
import pytest
from ballet.demo.stack import Stack
from ballet.demo.watch import look
from scenarios import new_repo, ticket

pytestmark = pytest.mark.anyio

BROKEN = """\
runtimes:
  script: {adapter: command, command: [python3, .ballet/agent.py]}
default_runtime: script
pipelines:
  default:
    stages:
      - {id: implement, kind: agent, nxt: {done: $done}}
"""


async def test_invalid_config_gets_an_error_comment_and_no_branch(stack: Stack) -> None:
    repo = await new_repo(stack, "broken-config", BROKEN)
    number = await ticket(stack, repo)

    for _ in range(150):
        view = await look(stack, repo, number)
        errors = [c for c in view.comments_on(number) if ".ballet.yml:7:" in c["body"]]
        if errors:
            break
        await anyio.sleep(0.2)
    else:
        raise AssertionError("no error comment on the issue")
    assert "nxt" in errors[0]["body"] and "next" in errors[0]["body"]
    assert view.record is None
    assert set(view.state["branches"]) == {"main"}
    assert view.state["pulls"] == []
    # No ticket: no Ballet labels and no checks, and the issue stays open for the fix.
    assert [label for label in view.issue(number)["labels"] if label.startswith("ballet:")] == []
    assert not any(r["name"].startswith("ballet/") for r in view.state["check_runs"])
    assert view.issue(number)["state"] == "open"


DECLARES_TMPDIR = """\
runtimes:
  script: {adapter: command, command: [python3, .ballet/agent.py], env: [TMPDIR]}
default_runtime: script
"""


async def test_a_runtime_declaring_a_variable_ballet_sets_starts_no_ticket(stack: Stack) -> None:
    repo = await new_repo(stack, "declares-tmpdir", DECLARES_TMPDIR)
    number = await ticket(stack, repo)

    for _ in range(150):
        view = await look(stack, repo, number)
        errors = [c for c in view.comments_on(number) if ".ballet.yml:2:74:" in c["body"]]
        if errors:
            break
        await anyio.sleep(0.2)
    else:
        raise AssertionError("no error comment on the issue")
    assert "remove TMPDIR from `env:`" in errors[0]["body"]
    assert view.record is None
    assert set(view.state["branches"]) == {"main"}
