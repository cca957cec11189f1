#!/usr/bin/env python3
"""An agent that writes down what its session was given of the earlier sessions.

Copied into the scenario's repository as `.ballet/seen_agent.py`. It reads each
earlier report and its handoff from `$BALLET_CONTEXT`, and whether its prompt
(`$BALLET_PROMPT`) shows the report's summary; then it hands over to the demo
agent (`.ballet/agent.py`) for the stage's real work and puts what it saw at
the head of that report's `details`, one line `seen-agent saw <json>`: the
report comment on the pull request carries it to the test. Standard library
only, like every session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SEEN = "seen-agent saw "


def seen(ctx: dict[str, Any], prompt: str) -> list[dict[str, Any]]:
    return [
        {
            "stage": r["stage"],
            "phase": r["phase"],
            "summary": r["report"]["summary"],
            "handoff": (r.get("handoff") or {}).get("summary"),
            "in_prompt": r["report"]["summary"] in prompt,
        }
        for r in ctx["earlier_reports"]
    ]


def main() -> int:
    ctx = json.loads(Path(os.environ["BALLET_CONTEXT"]).read_text())
    got = seen(ctx, Path(os.environ["BALLET_PROMPT"]).read_text())
    done = subprocess.run([sys.executable, ".ballet/agent.py"], check=False)
    path = Path(os.environ["BALLET_REPORT"])
    report = json.loads(path.read_text())
    report["details"] = f"{SEEN}{json.dumps(got)}\n\n{report.get('details', '')}"
    path.write_text(json.dumps(report))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
