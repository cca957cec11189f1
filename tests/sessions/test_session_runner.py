"""run_session end to end with a `command` runtime: real clone, real process, real push."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ballet.core.config import Runtime
from ballet.core.report import Handoff, Report
from ballet.sessions import (
    EarlierReport,
    SessionOptions,
    Workspaces,
    static_token,
)
from ballet.sessions.confine.session import PROXY_VARIABLES
from git_repos import git, remote_refs
from session_helpers import COMMIT_AND_REPORT, SECRETS, MakeSpec, WriteScript, run

REPORT_DONE = """
import json, os
json.dump({"outcome": "done", "summary": "did it"}, open(os.environ["BALLET_REPORT"], "w"))
"""


def test_the_session_sees_only_allowed_variables_and_a_fresh_home(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    dump = observed / "env.json"
    write_script(
        "agent",
        "import json, os\n"
        f"home = os.environ['HOME']\n"
        f"json.dump({{'env': dict(os.environ), 'home': os.listdir(home), 'cwd': os.getcwd()}},"
        f" open({str(dump)!r}, 'w'))\n" + REPORT_DONE,
    )
    spec = make_spec(
        runtime=Runtime(adapter="command", command=("agent",), env=("ANTHROPIC_API_KEY",))
    )
    result = run(spec, workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    seen = json.loads(dump.read_text())
    env: dict[str, str] = seen["env"]
    for secret in SECRETS.values():
        assert secret not in json.dumps(env)
    # TMPDIR: a directory of the session's own (every adapter sets it).
    allowed = {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "ANTHROPIC_API_KEY"}
    contract = {
        "BALLET_REPORT",
        "BALLET_CONTEXT",
        "BALLET_PROMPT",
        "BALLET_TICKET",
        "BALLET_STAGE",
        "BALLET_ITERATION",
        "BALLET_PHASE",
    }
    # The egress proxy, the only way out of the sandbox.
    contract |= {*PROXY_VARIABLES, "NO_PROXY", "no_proxy", "NODE_USE_ENV_PROXY"}
    # Whatever the process itself adds (the interpreter's PWD, locale tweaks) aside:
    assert set(env) - {"PWD", "SHLVL", "_", "LC_CTYPE"} == allowed | contract
    assert env["BALLET_TICKET"] == "octo/demo#7"
    assert env["BALLET_STAGE"] == "implement"
    assert env["BALLET_ITERATION"] == "1"
    assert env["BALLET_PHASE"] == ""
    assert seen["home"] == []
    assert env["HOME"] != parent_env.get("HOME")
    clone = Path(seen["cwd"])
    for name in ("BALLET_REPORT", "BALLET_CONTEXT", "BALLET_PROMPT"):
        assert not Path(env[name]).is_relative_to(clone)
    assert not Path(env["HOME"]).exists()  # removed afterwards


def test_a_runtime_may_not_ask_for_ballet_secrets(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
) -> None:
    write_script("agent", REPORT_DONE)
    spec = make_spec(
        runtime=Runtime(adapter="command", command=("agent",), env=("REDIS_URL", "GITHUB_TOKEN"))
    )
    result = run(spec, workspaces, parent_env, options)
    assert result.failure_reason == "runtime"
    assert "REDIS_URL, GITHUB_TOKEN" in result.report.summary


def test_context_and_prompt_describe_the_ticket(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    copy = observed / "copy"
    write_script(
        "agent",
        "import os, shutil\n"
        f"os.makedirs({str(copy)!r})\n"
        f"shutil.copy(os.environ['BALLET_CONTEXT'], {str(copy)!r})\n"
        f"shutil.copy(os.environ['BALLET_PROMPT'], {str(copy)!r})\n" + REPORT_DONE,
    )
    earlier = EarlierReport(
        stage="review", iteration=1, report=Report(outcome="changes_requested", summary="fix X")
    )
    spec = make_spec(iteration=2, pr_number=9, earlier_reports=(earlier,))
    result = run(spec, workspaces, parent_env, options)
    assert result.failure_reason is None
    context = json.loads((copy / "context.json").read_text())
    assert context["ticket"]["repo"] == "octo/demo"
    assert context["ticket"]["labels"] == ["ballet"]
    assert context["stage"] == {
        "id": "implement",
        "kind": "agent",
        "skills": ["implementer"],
        "iteration": 2,
        "attempt": 1,
        "phase": None,
        "outcomes": {},
    }
    assert context["pipeline"] == {"name": "default", "version": 1}
    assert (context["branch"], context["base"], context["pr_number"]) == (
        "ballet/7-greeting",
        "main",
        9,
    )
    assert context["earlier_reports"][0]["report"]["summary"] == "fix X"
    prompt = (copy / "prompt.md").read_text()
    assert "Write the code." in prompt  # the skill
    assert "## Acceptance criteria\n\n- [ ] says hello" in prompt
    assert "fix X" in prompt
    assert '"outcome": "done"' in prompt and "report.json" in prompt


def test_commits_are_pushed_to_the_ticket_branch_only(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    write_script(
        "agent",
        "import subprocess\n"
        "def git(*a): subprocess.run(['git', *a], check=True)\n"
        "git('tag', 'v-agent')\n"
        "git('checkout', '-q', '-b', 'agent-side')\n"
        "open('side.txt', 'w').write('side')\n"
        "git('add', 'side.txt'); git('commit', '-q', '-m', 'side')\n"
        "git('checkout', '-q', 'ballet/7-greeting')\n"
        # The agent's own push is refused: only Ballet pushes.
        "assert subprocess.run(['git', 'push', 'origin', 'HEAD']).returncode != 0\n"
        + COMMIT_AND_REPORT,
    )
    before = remote_refs(origin)
    result = run(make_spec(), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    after = remote_refs(origin)
    assert set(after) - set(before) == {"refs/heads/ballet/7-greeting"}
    assert after["refs/heads/main"] == before["refs/heads/main"]
    assert after["refs/heads/ballet/7-greeting"] == result.head_sha
    assert git("show", f"{result.head_sha}:greeting.txt", cwd=origin) == "hello"
    assert git("log", "-1", "--format=%an", result.head_sha, cwd=origin) == "Ballet"


def test_a_push_leaves_the_mirror_naming_only_objects_it_holds(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
) -> None:
    # The push borrows the clone's objects for one command; the clone then goes.
    # The mirror is then given the pushed head (so the next session need not fetch
    # it): with the objects it names copied in, never borrowed from the gone clone,
    # or every clone, gc or read of it would see a broken repository.
    write_script("agent", COMMIT_AND_REPORT)
    result = run(make_spec(), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    mirror = workspaces.mirror_path("octo/demo")
    refs = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=mirror).splitlines()
    assert refs[0] == f"refs/heads/ballet/7-greeting {result.head_sha}"
    assert [ref.split()[0] for ref in refs] == ["refs/heads/ballet/7-greeting", "refs/heads/main"]
    assert not list((workspaces.root / "sessions").iterdir())  # the clone is gone
    git("fsck", "--connectivity-only", "--no-dangling", cwd=mirror)
    assert git("show", f"{result.head_sha}:greeting.txt", cwd=mirror) == "hello"


def test_the_token_reaches_no_file_of_the_session(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    token = "ghs_session_token_never_on_disk"
    found = observed / "found.txt"
    write_script(
        "agent",
        "import os, pathlib\n"
        "hits = [str(p) for d in (os.getcwd(), os.environ['HOME'], "
        "str(pathlib.Path(os.environ['BALLET_REPORT']).parent), os.path.dirname(os.getcwd()))\n"
        "        for p in pathlib.Path(d).rglob('*') if p.is_file()\n"
        f"        and {token!r}.encode() in p.read_bytes()]\n"
        f"hits += [k for k, v in os.environ.items() if {token!r} in v]\n"
        f"open({str(found)!r}, 'w').write(repr(hits))\n" + COMMIT_AND_REPORT,
    )
    result = run(make_spec(), workspaces, parent_env, options, git_auth=static_token(token))
    assert result.failure_reason is None, result.report.summary
    assert found.read_text() == "[]"
    leftovers = [p for p in workspaces.root.rglob("*") if p.is_file()]
    assert leftovers  # the mirror remains, and holds no token either
    assert not [p for p in leftovers if token.encode() in p.read_bytes()]


def test_a_push_to_the_base_branch_is_refused(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    write_script("agent", COMMIT_AND_REPORT)
    before = remote_refs(origin)
    result = run(make_spec(branch="main"), workspaces, parent_env, options)
    assert result.failure_reason == "push"
    assert "refusing to push to the base branch 'main'" in result.report.summary
    assert remote_refs(origin) == before


def test_a_branchless_pipeline_pushes_nothing(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    write_script("agent", REPORT_DONE)
    before = remote_refs(origin)
    result = run(make_spec(branch=None), workspaces, parent_env, options)
    assert result.failure_reason is None
    assert result.head_sha == before["refs/heads/main"]
    assert remote_refs(origin) == before


@pytest.mark.parametrize(
    ("script", "reason", "says"),
    [
        ("print('working on it')\n", "missing_report", "wrote no report"),
        (
            "import os, sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n",
            "exit_code",
            "exited with code 3",
        ),
        (
            "import os\nopen(os.environ['BALLET_REPORT'], 'w').write('{not json')\n"
            "print('wrote junk')\n",
            "invalid_report",
            "does not match the contract",
        ),
        (
            "import os, json\n"
            "json.dump({'summary': 'no outcome'}, open(os.environ['BALLET_REPORT'], 'w'))\n"
            "print('forgot the outcome')\n",
            "invalid_report",
            "outcome: Field required",
        ),
        (
            "import os\nopen(os.environ['BALLET_REPORT'], 'w').write(' ' * (2 * 1024 * 1024))\n"
            "print('huge')\n",
            "invalid_report",
            "the limit is",
        ),
        (
            # 100 MB: refused after reading at most the limit (1 MB) of it.
            "import os\nwith open(os.environ['BALLET_REPORT'], 'wb') as f:\n"
            "    for _ in range(100):\n        f.write(b' ' * (1024 * 1024))\n",
            "invalid_report",
            "104857600 bytes; the limit is 1048576",
        ),
        (
            # A report that is endless (/dev/zero) or points out of the workspace.
            "import os\nos.symlink('/dev/zero', os.environ['BALLET_REPORT'])\n",
            "invalid_report",
            "write a plain file",
        ),
        (
            "import time\nprint('thinking', flush=True)\ntime.sleep(60)\n",
            "timeout",
            "timeout",
        ),
    ],
)
def test_each_failure_mode_ends_failed_with_its_reason_not_its_output(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
    script: str,
    reason: str,
    says: str,
) -> None:
    write_script("agent", COMMIT_AND_REPORT.split("json.dump")[0] + script)
    before = remote_refs(origin)
    result = run(make_spec(timeout_seconds=1.5), workspaces, parent_env, options)
    assert result.failure_reason == reason
    assert result.report.outcome == "failed"
    assert says in result.report.summary
    last_line = {
        "missing_report": "working on it",
        "exit_code": "boom",
        "invalid_report": None,
        "timeout": "thinking",
    }.get(reason)
    if last_line:
        # What the session printed stays in its log; the report, which the next
        # session is given, says what failed (none of these lines says an error).
        assert last_line not in result.report.summary
        assert last_line in result.output_tail
        assert "Its whole output is in the session's log." in result.report.summary
    assert remote_refs(origin) == before  # a failed session's commits are not pushed


def test_a_non_zero_exit_with_a_valid_report_keeps_the_report(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
) -> None:
    write_script(
        "agent",
        "import json, os, sys\n"
        "json.dump({'outcome': 'fail', 'summary': 'tests are red'},"
        " open(os.environ['BALLET_REPORT'], 'w'))\n"
        "sys.exit(1)\n",
    )
    result = run(make_spec(stage={"id": "verify"}), workspaces, parent_env, options)
    assert result.failure_reason is None
    assert (result.report.outcome, result.report.summary) == ("fail", "tests are red")


def test_a_runtime_that_is_not_installed_fails_with_advice(
    make_spec: MakeSpec,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
) -> None:
    spec = make_spec(runtime=Runtime(adapter="command", command=("no-such-agent-cli",)))
    result = run(spec, workspaces, parent_env, options)
    assert result.failure_reason == "runtime"
    assert "no-such-agent-cli" in result.report.summary and "PATH" in result.report.summary


def test_a_missing_base_fails_the_session_not_the_worker(
    make_spec: MakeSpec,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
) -> None:
    result = run(make_spec(base="develop"), workspaces, parent_env, options)
    assert result.failure_reason == "workspace"
    assert "'develop'" in result.report.summary


PHASE_AGENT = """
import json, os
context = json.load(open(os.environ["BALLET_CONTEXT"]))
phase = os.environ["BALLET_PHASE"]
seen = {{"handoff": context["handoff"], "earlier": context["earlier_reports"],
        "answers": context["answers"], "handoff_path": os.environ.get("BALLET_HANDOFF")}}
open({log!r} + "/" + phase + ".json", "w").write(json.dumps(seen))
if phase == "research":
    json.dump({{"summary": "use module Y", "decisions": ["keep API"]}},
              open(os.environ["BALLET_HANDOFF"], "w"))
json.dump({{"outcome": "done", "summary": phase + " finished", "details": "private notes"}},
          open(os.environ["BALLET_REPORT"], "w"))
"""


def test_phases_pass_the_handoff_and_nothing_else(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    log = observed / "phases"
    log.mkdir()
    write_script("agent", PHASE_AGENT.format(log=str(log)))
    earlier = EarlierReport(
        stage="review", iteration=1, report=Report(outcome="changes_requested", summary="fix X")
    )
    answer = {"question": "Which module?", "answer": "Y"}
    research = run(
        make_spec(phase="research", earlier_reports=(earlier,), answers=(answer,)),
        workspaces,
        parent_env,
        options,
    )
    assert research.failure_reason is None
    assert research.handoff == Handoff(summary="use module Y", decisions=("keep API",))
    plan = run(
        make_spec(
            phase="plan", handoff=research.handoff, earlier_reports=(earlier,), answers=(answer,)
        ),
        workspaces,
        parent_env,
        options,
    )
    assert plan.failure_reason is None
    seen_research = json.loads((log / "research.json").read_text())
    seen_plan = json.loads((log / "plan.json").read_text())
    assert seen_research["handoff"] is None
    assert seen_research["earlier"][0]["report"]["summary"] == "fix X"
    assert seen_plan["handoff"] == research.handoff.model_dump(mode="json")
    assert seen_plan["earlier"] == []  # earlier reports reached it through the handoff
    assert "private notes" not in json.dumps(seen_plan)
    assert seen_plan["answers"] == [answer | {"author": None}]
    assert seen_plan["handoff_path"] and seen_plan["handoff_path"].endswith("handoff.json")
    # A phase that writes no handoff passes on its report's summary.
    assert plan.handoff == Handoff(summary="plan finished")


def test_an_invalid_handoff_fails_the_phase(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    options: SessionOptions,
) -> None:
    write_script(
        "agent",
        "import os\nopen(os.environ['BALLET_HANDOFF'], 'w').write('[1, 2]')\n" + REPORT_DONE,
    )
    result = run(make_spec(phase="plan"), workspaces, parent_env, options)
    assert result.failure_reason == "invalid_handoff"


def test_a_session_that_deletes_its_branch_fails_and_pushes_nothing(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    write_script(
        "agent",
        "import subprocess\n"
        "subprocess.run(['git', 'checkout', '-q', '--detach'], check=True)\n"
        "subprocess.run(['git', 'branch', '-q', '-D', 'ballet/7-greeting'], check=True)\n"
        + REPORT_DONE,
    )
    before = remote_refs(origin)
    result = run(make_spec(), workspaces, parent_env, options)
    assert result.failure_reason == "push"
    assert "deleted its branch 'ballet/7-greeting'" in result.report.summary
    assert remote_refs(origin) == before
