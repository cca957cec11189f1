"""Characters a reader of GitHub does not see, though an agent reads every one.

Unicode's format characters (category Cf: zero-width spaces and joiners, the
bidi controls U+202A–U+202E and U+2066–U+2069, U+FEFF, the soft hyphen), the
tag block U+E0000–U+E007F (which spells ASCII invisibly), the variation
selectors (which can carry bytes after any character), control characters
other than tab and newline (terminal escapes among them), and the few letters
that render as nothing (the Hangul fillers, the combining grapheme joiner).

The zero-width joiner goes too: an emoji sequence it held falls apart into its
emoji, which costs an agent nothing.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

INVISIBLE_CHARACTERS = "invisible_characters"

_ALSO = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels, shown as nothing
    (0x180B, 0x180F),  # Mongolian variation selectors
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),
    (0xE0000, 0xE007F),  # the tag block, assigned or not
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
# Where Cf and Cc characters are (Unicode 15): scanned once, on first use.
_SCANNED = (*range(0x0000, 0x20000), *range(0xE0000, 0xE0080))


@cache
def invisible() -> re.Pattern[str]:
    points = {
        cp
        for cp in _SCANNED
        if unicodedata.category(chr(cp)) in ("Cf", "Cc") and chr(cp) not in "\t\n"
    }
    points.update(cp for low, high in _ALSO for cp in range(low, high + 1))
    return re.compile("[" + "".join(_ranges(sorted(points))) + "]")


def remove_invisible(text: str) -> tuple[str, int]:
    """`text` without its invisible characters, and how many there were."""
    return invisible().subn("", text)


def only_invisible(text: str) -> bool:
    return bool(text) and not invisible().sub("", text)


def _ranges(points: list[int]) -> list[str]:
    out: list[str] = []
    start = prev = points[0]
    for cp in [*points[1:], -1]:
        if cp == prev + 1:
            prev = cp
            continue
        out.append(re.escape(chr(start)) + ("-" + re.escape(chr(prev)) if prev > start else ""))
        start = prev = cp
    return out
