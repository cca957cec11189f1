#!/usr/bin/env python3
"""A scripted agent for the demo and the end-to-end tests: no model, real work.

It is copied into the demo repository as `.ballet/agent.py` and run by the
`command` runtime, so it sees exactly what any agent sees: the clone as its
working directory and the `BALLET_*` variables of the session contract.

- implement: takes the issue's ```python blocks (first: code for the file named
  by `demo:file=...`, default `calc.py`; second: a test for `tests/`), writes
  them, commits;
- review: reads `git diff base...HEAD` and approves a diff that adds code and a test;
- verify: runs the repository's tests (`python3 -m unittest`);
- a stage with the integrator skill: merges the base into the branch (and each
  companion's base into its branch), conflicts resolved by keeping both sides'
  lines (git's union merge), runs the tests, commits;
- any role stage (sign-off): signs off;
- spike stages: writes a knowledge report about the repository.

Lines `demo:<stage>=<outcome>@<iteration>` in the issue body script other
outcomes, e.g. `demo:review=changes_requested@1` or `demo:implement=question@1`;
`demo:sleep-<stage>=<seconds>` slows a stage, `demo:hang-<stage>=<seconds>` slows
only its first attempt (writing its pid namespace to `$HOME/hanging.ns`, so a test
can kill the worker under it and see the session go with it),
`demo:crash-<stage>=yes` makes its first attempt crash without a report,
`demo:break-ci=yes@1` has implement turn the repository's CI red in that iteration,
`demo:usage=yes` has every session report the usage of a metered model (USAGE
below), as a `command` runtime may, and `demo:companion=<name>` has implement also
commit the issue's code as `from_<ticket>.py` in the companion repository of that
name (`BALLET_COMPANIONS`; one line per companion, `@<n>` from iteration n on), whose
diff review then reads too
(`demo:break-companion-ci=yes@1` turns that companion's CI red in that iteration).
Only the standard library is used: a session's environment is bare.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PASSING = ("done", "approve", "pass", "signed_off", "merged")
USAGE = {"input_tokens": 1000, "output_tokens": 250, "cost_usd": 0.5}
NO_USAGE = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=True)
    return done.stdout


def scripted(body: str, stage: str, iteration: int) -> str | None:
    for m in re.finditer(r"^demo:([\w-]+)=([\w$-]+)(?:@(\d+))?\s*$", body, re.M):
        if m.group(1) == stage and (m.group(3) is None or int(m.group(3)) == iteration):
            return m.group(2)
    return None


def companions_changed(body: str, iteration: int) -> set[str]:
    """The companions implement changes: each `demo:companion=<name>` line, one
    with `@<n>` from iteration n on."""
    lines = re.finditer(r"^demo:companion=([\w-]+)(?:@(\d+))?\s*$", body, re.M)
    return {m.group(1) for m in lines if m.group(2) is None or int(m.group(2)) <= iteration}


def python_blocks(body: str) -> list[str]:
    return [b.strip() + "\n" for b in re.findall(r"```python\n(.*?)```", body, re.S)]


def implement(ctx: dict[str, Any], body: str, iteration: int) -> dict[str, Any]:
    blocks = python_blocks(body)
    if not blocks:
        return {"outcome": "failed", "summary": "The issue has no ```python block to implement."}
    target = Path(scripted(body, "file", 0) or "calc.py")
    existing = target.read_text() if target.exists() else ""
    if blocks[0] not in existing:
        target.write_text(existing.rstrip("\n") + "\n\n\n" + blocks[0] if existing else blocks[0])
    red = Path(".ci-red")
    if scripted(body, "break-ci", iteration):
        red.write_text("turned red on purpose by the scenario\n")
    elif red.exists():
        red.unlink()
    if len(blocks) > 1:
        test = Path("tests") / f"test_ticket_{ctx['ticket']['number']}.py"
        test.parent.mkdir(exist_ok=True)
        test.write_text(blocks[1])
    feedback = [
        r["report"].get("summary", "")
        for r in ctx.get("earlier_reports", [])
        if r["report"].get("outcome") not in PASSING
    ]
    if iteration > 1 or feedback:
        notes = Path("NOTES.md")
        notes.write_text(notes.read_text() if notes.exists() else "")
        with notes.open("a") as fh:
            fh.write(
                f"- iteration {iteration}: addressed: {feedback[-1] if feedback else 'retry'}\n"
            )
    git("add", "-A")
    if git("status", "--porcelain").strip():
        git("commit", "-q", "-m", f"{ctx['ticket']['title']} (iteration {iteration})")
    for companion in ctx.get("companions", []):
        if companion["repo"].split("/")[1] in companions_changed(body, iteration):
            path = Path(companion["path"]) / f"from_{ctx['ticket']['number']}.py"
            path.write_text(blocks[0])
            red = Path(companion["path"]) / ".ci-red"
            if scripted(body, "break-companion-ci", iteration):
                red.write_text("turned red on purpose by the scenario\n")
            elif red.exists():
                red.unlink()
            git("-C", companion["path"], "add", "-A")
            if git("-C", companion["path"], "status", "--porcelain").strip():
                git("-C", companion["path"], "commit", "-q", "-m", ctx["ticket"]["title"])
    return {
        "outcome": "done",
        "summary": f"Implemented `{target}` with a test.",
        "decisions": [f"appended the issue's code to {target}"],
    }


def companion_diff(companion: dict[str, Any]) -> str:
    diff = git("-C", companion["path"], "diff", f"origin/{companion['base']}...HEAD")
    files = re.findall(r"^\+\+\+ b/(\S+)", diff, re.M)
    return f"{companion['repo']} changes {', '.join(files) or 'nothing'}"


def review(ctx: dict[str, Any]) -> dict[str, Any]:
    base = ctx.get("base") or "main"
    diff = git("diff", f"origin/{base}...HEAD")
    added_code = re.search(r"^\+\s*def ", diff, re.M)
    added_test = re.search(r"^\+\+\+ b/tests/", diff, re.M)
    read = [companion_diff(c) for c in ctx.get("companions", [])]
    also = f" Companions' diffs read: {'; '.join(read)}." if read else ""
    if added_code and added_test:
        return {
            "outcome": "approve",
            "summary": f"The diff adds the function and a test for it.{also}",
        }
    return {
        "outcome": "changes_requested",
        "summary": "The diff must add a function and a test under tests/.",
    }


def verify() -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-t", "."],
        capture_output=True,
        text=True,
    )
    tail = (run.stdout + run.stderr)[-1500:]
    outcome = "pass" if run.returncode == 0 else "fail"
    return {
        "outcome": outcome,
        "summary": f"`python -m unittest`: {outcome}",
        "details": f"```\n{tail}\n```",
    }


def bring_up_to_date(path: str, base: str, how: str) -> subprocess.CompletedProcess[str]:
    """`git merge` (or rebase) the base into the clone at `path`, both intents kept: each
    conflicting hunk keeps the base's lines and the branch's."""
    info = Path(path, git("-C", path, "rev-parse", "--git-dir").strip(), "info")
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* merge=union\n")
    command = ["merge", "--no-edit"] if how == "merge" else ["rebase"]
    return subprocess.run(
        ["git", "-C", path, *command, f"origin/{base}"], capture_output=True, text=True
    )


def integrate(ctx: dict[str, Any]) -> dict[str, Any]:
    base = ctx.get("base") or "main"
    how = ctx.get("update_with") or "merge"
    # Every repository's branch, the companions' first, each on its own base.
    repos = [(c["repo"], c["path"], c["base"]) for c in ctx.get("companions", [])]
    said = ""
    for repo, path, theirs in [*repos, (ctx["ticket"]["repo"], ".", base)]:
        merged = bring_up_to_date(path, theirs, how)
        if merged.returncode != 0:
            return {
                "outcome": "returned",
                "summary": f"`git {how} origin/{theirs}` in {repo} failed: "
                + (merged.stdout + merged.stderr)[-500:],
            }
        said += f"{repo}: {merged.stdout.strip()[-300:]}\n"
    checks = verify()
    if checks["outcome"] != "pass":
        return {
            "outcome": "returned",
            "summary": f"after the merge: {checks['summary']}",
            "details": checks["details"],
        }
    also = f", and {', '.join(r for r, _, _ in repos)} with theirs" if repos else ""
    return {
        "outcome": "done",
        "summary": f"Brought the branch up to date with `{base}` by {how}{also}; tests pass.",
        "details": said[-1000:],
    }


def knowledge() -> dict[str, Any]:
    files = [f for f in git("ls-files").splitlines() if not f.startswith(".ballet")]
    return {
        "outcome": "done",
        "summary": "Knowledge report: the repository holds "
        f"{len(files)} files: " + ", ".join(f"`{f}`" for f in files[:20]),
    }


def main() -> int:
    ctx = json.loads(Path(os.environ["BALLET_CONTEXT"]).read_text())
    stage = ctx["stage"]
    stage_id, iteration = stage["id"], int(stage.get("iteration", 1))
    body = ctx["ticket"].get("body") or ""
    pause = scripted(body, f"sleep-{stage_id}", iteration)
    if pause:
        time.sleep(float(pause))
    hang = scripted(body, f"hang-{stage_id}", iteration)
    if hang and int(stage.get("attempt", 1)) == 1:
        # Its pid namespace: what a test outside the sandbox can find it by.
        (Path(os.environ["HOME"]) / "hanging.ns").write_text(os.readlink("/proc/self/ns/pid"))
        time.sleep(float(hang))
    if scripted(body, f"crash-{stage_id}", iteration) and int(stage.get("attempt", 1)) == 1:
        print("the agent crashed on purpose (scenario)", file=sys.stderr)
        return 3
    if stage.get("phase"):
        handoff_path = os.environ.get("BALLET_HANDOFF")
        if handoff_path:
            previous = ctx.get("handoff") or {}
            Path(handoff_path).write_text(
                json.dumps(
                    {
                        "summary": f"{stage['phase']} done; before: {previous.get('summary', '-')}",
                        "decisions": [f"phase {stage['phase']}"],
                    }
                )
            )
    # A person's answer settles what the script would have made the agent do.
    outcome = None if ctx.get("answers") else scripted(body, stage_id, iteration)
    report: dict[str, Any]
    if outcome == "question":
        report = {
            "outcome": "done",
            "summary": "I need a decision before going on.",
            "questions": [{"text": "Which rounding should multiply use?", "blocking": True}],
        }
    elif outcome is not None:
        report = {"outcome": outcome, "summary": f"Scripted outcome `{outcome}` for {stage_id}."}
    elif stage.get("phase") in ("research", "plan"):
        report = {"outcome": "done", "summary": f"{stage['phase']} phase finished."}
    elif stage_id.startswith("implement"):
        report = implement(ctx, body, iteration)
    elif stage_id.startswith("review"):
        report = review(ctx)
    elif stage_id.startswith("verify"):
        report = verify()
    elif "integrator" in stage.get("skills", ()):
        report = integrate(ctx)
    elif stage_id.startswith("signoff-"):
        role = stage_id.removeprefix("signoff-")
        report = {"outcome": "signed_off", "summary": f"Signed off as {role}."}
    else:
        report = knowledge()
    report.setdefault("usage", USAGE if scripted(body, "usage", 0) else NO_USAGE)
    Path(os.environ["BALLET_REPORT"]).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
