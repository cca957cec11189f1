"""What the sandbox's CI says about a finished command, as a CI on GitHub would say it:
a summary that ends with the output's last lines when it failed (the reason is
usually there), and annotations from GitHub Actions' workflow commands printed
by the command (`::error file=a.py,line=3,title=E1::message`).
"""

from __future__ import annotations

import re
from typing import Any

# The tail a failed run's summary quotes: enough for a traceback's last frame.
SUMMARY_LINES = 20
SUMMARY_CHARS = 4000
# GitHub Actions takes at most this many annotations of each level from one step.
MAX_PER_LEVEL = 10
COMMAND = re.compile(r"^::(error|warning|notice)(?: ([^:]*))?::(.*)$")
LEVELS = {"error": "failure", "warning": "warning", "notice": "notice"}
# GitHub Actions' names for an annotation's place, as the workflow command spells them.
PLACES = {
    "line": "start_line",
    "endLine": "end_line",
    "col": "start_column",
    "endColumn": "end_column",
}


def summary(argv: list[str], conclusion: str, text: str) -> str:
    said = f"`{' '.join(argv)}` finished: {conclusion}"
    tail = "\n".join(text.rstrip("\n").splitlines()[-SUMMARY_LINES:])[-SUMMARY_CHARS:]
    if conclusion == "success" or not tail.strip():
        return said
    return f"{said}\n\nThe last lines of its output:\n\n```\n{tail}\n```"


def workflow_annotations(text: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    counted: dict[str, int] = {}
    for line in text.splitlines():
        match = COMMAND.match(line.strip())
        if match is None:
            continue
        kind, params, message = match[1], _params(match[2] or ""), match[3]
        counted[kind] = counted.get(kind, 0) + 1
        if counted[kind] > MAX_PER_LEVEL:
            continue
        # Without a file, GitHub Actions files the annotation under the workflow (.github).
        item: dict[str, Any] = {
            "path": params.get("file", ".github"),
            "start_line": 1,
            "end_line": None,
            "annotation_level": LEVELS[kind],
            "message": message,
            "title": params.get("title"),
            "raw_details": None,
            "start_column": None,
            "end_column": None,
        }
        for name, key in PLACES.items():
            if params.get(name, "").isdigit():
                item[key] = int(params[name])
        item["end_line"] = item["end_line"] or item["start_line"]
        found.append(item)
    return found


def _params(text: str) -> dict[str, str]:
    pairs = (part.split("=", 1) for part in text.split(",") if "=" in part)
    return {key.strip(): value.strip() for key, value in pairs}
