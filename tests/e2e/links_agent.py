#!/usr/bin/env python3
"""An agent that checks what a session is told of its ticket's epic and lineage.

Copied into the scenario's repository as `.ballet/links_agent.py` with `EXPECTED`
filled in by the test. It compares the epic and lineage in `$BALLET_CONTEXT`
(and their brief form in `$BALLET_PROMPT`) with what the test built on GitHub;
on any difference it reports `failed` naming it, otherwise it hands over to the
demo agent (`.ballet/agent.py`) to do the stage's real work, and adds what it saw
to that report's summary. Standard library only, like every session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

EXPECTED: dict[str, Any] = {}  # replaced by the test


def seen(ctx: dict[str, Any]) -> dict[str, Any]:
    epic = ctx.get("epic")
    return {
        "epic": None
        if epic is None
        else {
            "number": epic["number"],
            "title": epic["title"],
            "state": epic["state"],
            "criteria": epic["acceptance_criteria"],
            "body_has": EXPECTED["epic_body_has"] in epic["body"],
            "subs": [
                [s["number"], s["state"], (s["ballet"] or {}).get("status")]
                for s in epic["sub_issues"]
            ],
            "total": epic["sub_issues_total"],
        },
        "lineage": sorted([i["number"], i["relation"], i["kind"]] for i in ctx["lineage"]),
    }


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def write(path: str, report: dict[str, Any]) -> None:
    with open(path, "w") as f:
        json.dump(report, f)


def main() -> int:
    ctx = json.loads(read(os.environ["BALLET_CONTEXT"]))
    prompt = read(os.environ["BALLET_PROMPT"])
    got = seen(ctx)
    problems = [
        f"{key}: expected {EXPECTED[key]!r}, saw {got[key]!r}"
        for key in ("epic", "lineage")
        if got[key] != EXPECTED[key]
    ]
    problems += [f"the prompt lacks {line!r}" for line in EXPECTED["prompt"] if line not in prompt]
    if problems:
        report = {"outcome": "failed", "summary": "links-agent: " + "; ".join(problems)}
        write(os.environ["BALLET_REPORT"], report)
        return 0
    done = subprocess.run([sys.executable, ".ballet/agent.py"], check=False)
    path = os.environ["BALLET_REPORT"]
    report = json.loads(read(path))
    saw = json.dumps(got, sort_keys=True)
    report["summary"] = f"links-agent saw {saw}\n\n{report['summary']}"
    write(path, report)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
