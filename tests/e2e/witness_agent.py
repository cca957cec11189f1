#!/usr/bin/env python3
"""An agent that keeps what its session was given, for the test to read.

Copied into the scenario's repository as `.ballet/witness_agent.py`. It writes
its prompt (`$BALLET_PROMPT`) and context (`$BALLET_CONTEXT`) as they reached
the session process to `.witness/<stage>-<iteration>.json` in its clone, then
hands over to the demo agent (`.ballet/agent.py`), whose commit takes the file
along: Ballet pushes it to the ticket's branch, where the test reads it. Standard
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
    return subprocess.run([sys.executable, ".ballet/agent.py"], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
