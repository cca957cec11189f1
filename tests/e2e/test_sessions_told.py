"""What sessions are told, on the sandbox, read back from what each session received.

- A failed attempt's retry is given what failed (the reason, the exit, its last error
  line), never the rest of what attempt 1 printed (issue 34, item 6).
- A sign-off session's prompt and `$BALLET_CONTEXT` list exactly its outcomes,
  `signed_off` and `changes`, with what each does, and its report's example is
  `signed_off` (item 4); it runs on its role's own `model` and `effort`, as its
  session's log says (item 8).
- A phased stage with `phases.artefact_path` writes each handoff on the branch, its
  later phases find them in their clone, and they never reach the merge (item 9).
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from scenarios import comment, merged, outcomes, status_is, ticket, wait_until
from witnessed import WITNESS, repo_request, witnessed

pytestmark = pytest.mark.anyio

MARKER = "TRANSCRIPT-MARKER-4b1"
# Attempt 1 of implement thinks aloud, then fails; later attempts are the witness.
TOLD_AGENT = f"""\
import json, os, sys
ctx = json.load(open(os.environ["BALLET_CONTEXT"]))
if ctx["stage"]["id"] == "implement" and ctx["stage"]["attempt"] == 1:
    print("{MARKER} the agent thinks aloud here")
    print("Error: the build server refused the connection", file=sys.stderr)
    sys.exit(3)
os.execv(sys.executable, [sys.executable, ".ballet/witness_agent.py"])
"""
SIGNED_OFF = (
    "trigger_label: ballet\n"
    "runtimes:\n"
    "  script: {adapter: command, command: [python3, .ballet/agent.py]}\n"
    "  told: {adapter: command, command: [python3, .ballet/told_agent.py]}\n"
    "default_runtime: script\n"
    "roles:\n"
    "  security: {runtime: told, model: opus, effort: high, skills: [reviewer]}\n"
    "pipelines:\n"
    "  default:\n"
    "    signoffs: [security]\n"
    "    stages:\n"
    "      - {id: implement, kind: agent, runtime: told, skills: [implementer],"
    " timeout_minutes: 5}\n"
    "      - {id: integrate, kind: platform, action: merge, next: {merged: $done}}\n"
)


def session_starts(stack: Stack) -> list[str]:
    """The first line of each finished session's log, as the session's page shows it."""
    logs = (stack.settings.data_dir / "logs").rglob("*.log.gz")
    return sorted(gzip.decompress(p.read_bytes()).decode().splitlines()[0] for p in logs)


async def test_a_retry_is_told_what_failed_and_a_signoff_its_outcomes(stack: Stack) -> None:
    files = {
        ".ballet/witness_agent.py": WITNESS,
        ".ballet/told_agent.py": TOLD_AGENT,
    }
    created = await stack.create_repo(repo_request("told", SIGNED_OFF, files=files))
    repo: str = created["full_name"]
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, status_is("waiting"), timeout=60)
    assert ("implement", 1, "failed") in outcomes(view)
    await comment(stack, repo, number, demo.AUTHOR, "/ballet retry")
    view = await wait_until(stack, repo, number, merged, timeout=120)
    assert view.record is not None
    signed = [run.outcome for run in view.record.history if run.role == "security"]
    assert signed == ["signed_off"]

    retry = await witnessed(stack, repo, "main", "implement", 1)
    assert retry["context"]["stage"]["attempt"] == 2
    prompt, context = retry["prompt"], json.dumps(retry["context"])
    assert MARKER not in prompt and MARKER not in context
    assert "thinks aloud" not in prompt and "thinks aloud" not in context
    for told in (
        "the session exited with an error and wrote no report",
        "it exited with code 3",
        "Error: the build server refused the connection",
    ):
        assert told in prompt and told in context, told

    signoff: dict[str, Any] = await witnessed(stack, repo, "main", "signoff-security", 1)
    starts = session_starts(stack)
    assert len(starts) == 3, starts  # two attempts of implement, then the sign-off
    assert sum("session started (command, model opus, effort high)" in s for s in starts) == 1
    assert sum("session started (command, model default, effort default)" in s for s in starts) == 2
    outcomes_told = signoff["context"]["stage"]["outcomes"]
    assert list(outcomes_told) == ["signed_off", "changes"]
    contract = signoff["prompt"][signoff["prompt"].index("## When you finish") :]
    assert '"outcome": "signed_off"' in contract and '"outcome": "done"' not in contract
    assert "- `signed_off`: you sign off as the `security` role" in contract
    assert "- `changes`: say what must change" in contract
    assert "`approve`" not in signoff["prompt"]  # the reviewer skill names no outcome


ARTEFACTS = demo.BALLET_YML.replace(
    "skills: [implementer], timeout_minutes: 5,",
    "skills: [implementer], timeout_minutes: 5, phases: [plan, implement],",
).replace("pipelines:\n", "phases: {artefact_path: .ballet/handoffs}\npipelines:\n", 1)
# Each phase keeps which handoffs its clone held, then the demo agent does the work.
PHASE_WITNESS = """\
import json, os, subprocess, sys
phase = os.environ["BALLET_PHASE"]
where = ".ballet/handoffs"
found = sorted(os.listdir(where)) if os.path.isdir(where) else []
if phase:
    os.makedirs(".witness", exist_ok=True)
    open(".witness/handoffs-" + phase + ".json", "w").write(json.dumps(found))
    subprocess.run(["git", "add", ".witness"], check=True)
    subprocess.run(["git", "commit", "-q", "-m", "witness " + phase], check=True)
os.execv(sys.executable, [sys.executable, ".ballet/demo_agent.py"])
"""


async def test_phase_handoffs_are_on_the_branch_for_later_phases_and_off_the_merge(
    stack: Stack,
) -> None:
    ballet_yml = ARTEFACTS.replace(".ballet/agent.py", ".ballet/phase_witness.py")
    request = repo_request("artefacts", ballet_yml, files={})
    request["files"][".ballet/phase_witness.py"] = PHASE_WITNESS
    request["files"][".ballet/demo_agent.py"] = request["files"][".ballet/agent.py"]
    created = await stack.create_repo(request)
    repo: str = created["full_name"]
    number = await ticket(stack, repo)

    view = await wait_until(stack, repo, number, merged, timeout=120)
    phases = [(s, o) for s, _, o in outcomes(view) if s == "implement"]
    assert phases == [("implement", "done"), ("implement", "done")]
    async with stack.user(demo.AUTHOR) as user:

        async def on_main(path: str) -> Any:
            response = await user.get(f"/repos/{repo}/contents/{path}", params={"ref": "main"})
            return response

        plan_saw = await on_main(".witness/handoffs-plan.json")
        implement_saw = await on_main(".witness/handoffs-implement.json")
        handoffs = await on_main(".ballet/handoffs")
    assert plan_saw.status_code == 200 and implement_saw.status_code == 200
    assert json.loads(base64.b64decode(plan_saw.json()["content"])) == []
    assert json.loads(base64.b64decode(implement_saw.json()["content"])) == ["implement-plan.json"]
    assert handoffs.status_code == 404  # gc_on_close: never merged
