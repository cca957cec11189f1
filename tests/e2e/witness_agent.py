#!/usr/bin/env python3
"""An agent that keeps what its session was given, for the test to read.

Copied into the scenario's repository as `.ballet/witness_agent.py`. It writes
its prompt (`$BALLET_PROMPT`) and context (`$BALLET_CONTEXT`) as they reached
the session process to `.witness/<stage>-<iteration>.json` in its clone, then
hands over to the demo agent (`.ballet/agent.py`) and commits the file (with
the demo agent's own commit, or alone): Ballet pushes it to the ticket's
branch, where the test reads it. Standard
library only, like every session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main() -> int:
    with open(os.environ["BALLET_PROMPT"]) as f:
        prompt = f.read()
    with open(os.environ["BALLET_CONTEXT"]) as f:
        context = json.load(f)
    stage = context["stage"]
    os.makedirs(".witness", exist_ok=True)
    path = f".witness/{stage['id']}-{stage['iteration']}.json"
    with open(path, "w") as f:
        json.dump({"prompt": prompt, "context": context}, f)
    done = subprocess.run([sys.executable, ".ballet/agent.py"], check=False)
    # A stage that commits nothing of its own (review, verify) commits the witness alone.
    subprocess.run(["git", "add", path], check=True)
    staged = subprocess.run(["git", "diff", "--cached", "--quiet"], check=False)
    if staged.returncode != 0:
        subprocess.run(["git", "commit", "-q", "-m", f"witness {path}"], check=True)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
