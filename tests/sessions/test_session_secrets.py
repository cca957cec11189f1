"""A hostile session that shows its secret every way it can: nothing Ballet publishes
carries it. Real confined sessions (`command` runtime), real git, a real push.

The session is given `PLANTED_KEY` (a random 40-character value, declared by its
runtime) and prints it to stdout and to stderr (once split across two writes in
the middle of the value), inside a JSON event, base64- and URL-encoded, writes it
into its report and commits it. The sink's live lines, the finished log, the
steps and the SessionResult must not hold it, and the push must be refused,
naming the variable and the file but never the value.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote

from ballet.core.config import Runtime
from ballet.sessions import SessionOptions, Workspaces, static_token
from git_repos import git, remote_refs
from session_helpers import MakeSpec, WriteScript
from session_logs import RecordingSink, planted_key, run_logged

BRANCH = "refs/heads/ballet/7-greeting"
GITHUB_SHAPED = "ghp_" + "A1b2C3d4E5f6" * 3  # never declared anywhere
SHOUT = """
import base64, json, os, subprocess, sys, time
from urllib.parse import quote
key = os.environ["PLANTED_KEY"]
half = len(key) // 2
sys.stdout.write("the key is " + key[:half]); sys.stdout.flush()
time.sleep(0.3)  # the rest of the value arrives in another read of the pipe
sys.stdout.write(key[half:] + " (stdout)\\n"); sys.stdout.flush()
sys.stderr.write("on stderr: " + key + "\\n"); sys.stderr.flush()
print(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": key}]}}))
print("basic " + base64.b64encode(("x-access-token:" + key).encode()).decode())
print("url " + quote("k=" + key))
print("found a token: " + sys.argv[1] if len(sys.argv) > 1 else "no token")
sys.stdout.flush()
"""
REPORT = """
report = {
    "outcome": "done",
    "summary": "used " + key,
    "details": "the key is " + key,
    "decisions": ["keep " + key],
    "questions": [{"text": "is " + key + " fine?", "blocking": False}],
}
json.dump(report, open(os.environ["BALLET_REPORT"], "w"))
"""
COMMIT = """
os.makedirs("conf", exist_ok=True)
open("conf/settings.env", "w").write("API_KEY=" + key + "\\n")
subprocess.run(["git", "add", "conf"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "Add settings"], check=True)
"""


def forms(key: str) -> list[str]:
    """The value as it was printed, and each form of it a reader could decode."""
    basic = base64.b64encode(("x-access-token:" + key).encode()).decode()
    return [key, key[: len(key) // 2 + 4], basic, quote("k=" + key), GITHUB_SHAPED]


def assert_nowhere(values: list[str], *texts: str) -> None:
    for value in values:
        for text in texts:
            assert value not in text


def test_a_committed_secret_is_never_pushed_nor_shown(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    key = planted_key()
    write_script("agent", SHOUT + COMMIT + REPORT)
    sink = RecordingSink()
    before = remote_refs(origin)
    result = run_logged(
        make_spec(runtime=Runtime(adapter="command", command=("agent", GITHUB_SHAPED),
                                  env=("PLANTED_KEY",))),
        workspaces, {**parent_env, "PLANTED_KEY": key}, options, sink,
    )  # fmt: skip

    assert result.failure_reason == "secret", result.report.summary
    assert remote_refs(origin) == before  # nothing pushed
    summary = result.report.summary
    assert "PLANTED_KEY" in summary and "conf/settings.env" in summary
    assert "nothing was pushed" in summary
    assert sink.finished == 1 and sink.log is not None
    assert_nowhere(forms(key), result.model_dump_json(), sink.everything())
    log = sink.log.decode()
    assert log.count("[redacted:PLANTED_KEY]") >= 4  # stdout (split), stderr, JSON, base64
    assert "[redacted:github-token]" in log
    assert "the key is [redacted:PLANTED_KEY] (stdout)" in log
    assert "on stderr: [redacted:PLANTED_KEY]" in [line.text for line in sink.lines]
    assert "secret)" in log.splitlines()[-1]  # the ended line says why
    assert any("[redacted:PLANTED_KEY]" in step.body for step in sink.steps)


def test_the_agents_own_report_and_handoff_are_redacted_when_kept(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    """No commit carries it: the session reports, its report and handoff are kept, redacted."""
    key = planted_key()
    handoff = (
        "json.dump({'summary': 'handed ' + key, 'decisions': [key]},"
        " open(os.environ['BALLET_HANDOFF'], 'w'))\n"
    )
    write_script("agent", SHOUT + REPORT + handoff)
    sink = RecordingSink()
    spec = make_spec(
        phase="research",
        runtime=Runtime(adapter="command", command=("agent",), env=("PLANTED_KEY",)),
    )
    result = run_logged(spec, workspaces, {**parent_env, "PLANTED_KEY": key}, options, sink)

    assert result.failure_reason is None, result.report.summary
    assert result.report.summary == "used [redacted:PLANTED_KEY]"
    assert result.report.details == "the key is [redacted:PLANTED_KEY]"
    assert result.report.decisions == ("keep [redacted:PLANTED_KEY]",)
    assert result.report.questions[0].text == "is [redacted:PLANTED_KEY] fine?"
    assert result.handoff is not None
    assert result.handoff.summary == "handed [redacted:PLANTED_KEY]"
    assert_nowhere(forms(key), result.model_dump_json(), sink.everything())
    report_steps = [step for step in sink.steps if step.kind == "report"]
    assert [step.title for step in report_steps] == ["report: done"]
    assert "used [redacted:PLANTED_KEY]" in report_steps[0].body


def test_a_secret_in_a_commit_message_or_encoded_in_a_file_stops_the_push(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    key = planted_key()
    commits = """
import base64, json, os, subprocess
key = os.environ["PLANTED_KEY"]
open("clean.txt", "w").write("nothing to see\\n")
subprocess.run(["git", "add", "clean.txt"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "Deploy with " + key], check=True)
open("clean.txt", "a").write("still nothing\\n")
subprocess.run(["git", "commit", "-qam", "More"], check=True)
json.dump({"outcome": "done", "summary": "ok"}, open(os.environ["BALLET_REPORT"], "w"))
"""
    write_script("agent", commits)
    sink = RecordingSink()
    spec = make_spec(runtime=Runtime(adapter="command", command=("agent",), env=("PLANTED_KEY",)))
    env = {**parent_env, "PLANTED_KEY": key}
    result = run_logged(spec, workspaces, env, options, sink)
    assert result.failure_reason == "secret"
    assert "PLANTED_KEY" in result.report.summary and "commit" in result.report.summary
    assert BRANCH not in remote_refs(origin)

    encoded = """
import base64, json, os, subprocess
key = os.environ["PLANTED_KEY"]
open("blob.b64", "w").write(base64.b64encode(b"prefix:" + key.encode()).decode())
subprocess.run(["git", "add", "blob.b64"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "Add a blob"], check=True)
json.dump({"outcome": "done", "summary": "ok"}, open(os.environ["BALLET_REPORT"], "w"))
"""
    write_script("agent", encoded)
    result = run_logged(make_spec(runtime=spec.runtime, attempt=2), workspaces, env, options, sink)
    assert result.failure_reason == "secret"
    assert "blob.b64" in result.report.summary
    assert key not in result.model_dump_json()
    assert BRANCH not in remote_refs(origin)


def test_clean_commits_are_pushed_and_the_git_token_never_shows(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    origin: Path,
) -> None:
    """A session that commits no secret is pushed as before; Ballet's git token, which
    the session never sees, would be redacted from anything it printed."""
    key = planted_key()
    token = "ghs_" + planted_key()
    agent = (
        "import json, os, subprocess\n"
        "print('harmless output')\n"
        "open('greeting.txt', 'w').write('hello\\n')\n"
        "subprocess.run(['git', 'add', 'greeting.txt'], check=True)\n"
        "subprocess.run(['git', 'commit', '-q', '-m', 'Greet'], check=True)\n"
        f"print('a token it guessed: {token}')\n"
        "json.dump({'outcome': 'done', 'summary': 'greeted'},"
        " open(os.environ['BALLET_REPORT'], 'w'))\n"
    )
    write_script("agent", agent)
    sink = RecordingSink()
    spec = make_spec(runtime=Runtime(adapter="command", command=("agent",), env=("PLANTED_KEY",)))
    env = {**parent_env, "PLANTED_KEY": key}
    result = run_logged(spec, workspaces, env, options, sink, git_auth=static_token(token))
    assert result.failure_reason is None, result.report.summary
    assert remote_refs(origin)[BRANCH] == result.head_sha
    assert git("show", f"{BRANCH}:greeting.txt", cwd=origin) == "hello"
    assert token not in sink.everything()
    assert "a token it guessed: [redacted:BALLET_GIT_TOKEN]" in sink.everything()
    started = sink.lines[0]
    assert (started.stream, started.seq) == ("ballet", 0)
    assert started.text.startswith("session started (command")
    assert sink.lines[-1].stream == "ballet" and "reported done" in sink.lines[-1].text
    assert json.loads(result.model_dump_json())["output_tail"].startswith("harmless output")
