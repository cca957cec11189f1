"""What Ballet reads out of an issue's Markdown: its acceptance criteria."""

from __future__ import annotations

import re

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*)$")


def acceptance_criteria(body: str) -> str | None:
    """The issue's "Acceptance criteria" section, else its checklist items, else None."""
    lines = body.splitlines()
    for index, line in enumerate(lines):
        heading = _HEADING.match(line)
        title = heading.group(1) if heading else line
        if title.strip(" \t*_:").lower() == "acceptance criteria":
            section = []
            for following in lines[index + 1 :]:
                if _HEADING.match(following):
                    break
                section.append(following)
            text = "\n".join(section).strip()
            if text:
                return text
    checklist = [line.strip() for line in lines if re.match(r"\s*[-*] \[[ xX]\] ", line)]
    return "\n".join(checklist) or None
