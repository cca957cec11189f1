"""The witness agent: how a scenario runs it and reads back what its session received.

`witness_agent.py` keeps the prompt and `$BALLET_CONTEXT` its session process
received in `.witness/<stage>-<iteration>.json` on the ticket's branch. A
scenario puts it in its repository as `.ballet/witness_agent.py`, runs it as the
`witness` runtime of the stages to witness in `.ballet.yml`, and reads the file
back through the sandbox's contents API.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from scenarios import lands_alone

WITNESS = (Path(__file__).parent / "witness_agent.py").read_text()
RUNTIMES = (
    "runtimes:\n"
    "  script: {adapter: command, command: [python3, .ballet/agent.py]}\n"
    "  witness: {adapter: command, command: [python3, .ballet/witness_agent.py]}\n"
)
# Implement by the witness, then merge.
IMPLEMENT_THEN_MERGE = (
    "trigger_label: ballet\n" + RUNTIMES + "default_runtime: script\n"
    "pipelines:\n"
    "  default:\n"
    "    stages:\n"
    "      - {id: implement, kind: agent, runtime: witness, timeout_minutes: 5}\n"
    "      - {id: integrate, kind: platform, action: merge, next: {merged: $done}}\n"
)
_IMPLEMENT = "- {id: implement, kind: agent, skills: [implementer], timeout_minutes: 5,"
# The demo's pipeline, its implement stage run by the witness.
WITNESSED = demo.BALLET_YML.replace(
    "runtimes:\n  script: {adapter: command, command: [python3, .ballet/agent.py]}\n", RUNTIMES
).replace(_IMPLEMENT, _IMPLEMENT.replace("kind: agent,", "kind: agent, runtime: witness,"))
# The same, with a human approval between verify and integrate; a reject reruns implement.
HUMAN = WITNESSED.replace(
    "next: {pass: integrate, fail: implement}}",
    "next: {pass: approval, fail: implement}}\n"
    "      - {id: approval, kind: human, next: {approve: integrate, reject: implement}}",
)


def repo_request(
    name: str,
    ballet_yml: str,
    files: Mapping[str, str] | None = None,
    collaborators: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The demo repository's request with `files` (the witness agent unless given) added."""
    request: dict[str, Any] = demo.new_repo_request(
        name, ballet_yml=lands_alone(ballet_yml), collaborators=collaborators
    )
    repo_files = request["files"]
    assert isinstance(repo_files, dict)
    repo_files.update({".ballet/witness_agent.py": WITNESS} if files is None else files)
    return request


async def witnessed_repo(
    stack: Stack, name: str, ballet_yml: str, collaborators: dict[str, str] | None = None
) -> str:
    """A demo repository with the witness agent; its full name."""
    created = await stack.create_repo(repo_request(name, ballet_yml, collaborators=collaborators))
    full_name: str = created["full_name"]
    return full_name


async def witnessed(stack: Stack, repo: str, ref: str, stage: str, iteration: int) -> Any:
    """What the session of `stage` in `iteration` received: its prompt and context."""
    async with stack.user(demo.AUTHOR) as user:
        path = f"/repos/{repo}/contents/.witness/{stage}-{iteration}.json"
        response = await user.get(path, params={"ref": ref})
    assert response.status_code == 200, f"no witness of {stage} {iteration}: {response.text}"
    return json.loads(base64.b64decode(response.json()["content"]))
