"""Reading Ballet's comment markers back, as a test looks at the forge's comments.

Ballet itself never parses a marker: it keeps the ids of the comments it wrote.
"""

from __future__ import annotations

import re

_MARKER = re.compile(r"<!-- ballet:marker (?P<key>[^\s>]+) -->")


def find_marker(body: str) -> str | None:
    match = _MARKER.search(body)
    return match["key"] if match else None
