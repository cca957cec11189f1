"""Text from GitHub as its reader sees it: what a person does not see is removed.

An agent reads every byte of an issue; a person reads the rendered page. What
only the agent would read — HTML comments, invisible and format characters,
image alt text, link titles, raw HTML attributes, link definitions — is where
a stranger hides instructions, so it never reaches a session (docs/security.md,
"Text from GitHub"). `clean` takes Markdown and gives Markdown back (the
parsing is `hidden_markdown`'s); `clean_line` takes a one-line text (a title)
and removes invisible characters only.

Invisible characters go everywhere, code included: inside a code block they are
as unseen as outside it, and shown as escapes they would still carry their
message. Code otherwise keeps its bytes.

Cleaning again changes nothing: a pass that removed something is followed by
another, until one removes nothing (a removal may join what it separated).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, fields

from ballet.core import hidden_html
from ballet.core.hidden_markdown import hidden_edits
from ballet.core.invisible_text import remove_invisible

MAX_PASSES = 6  # each pass that changes the text shortens it; real text needs two
_NEWLINES = re.compile(r"\r\n?")
# Text without these holds no Markdown construct that hides anything: not parsed.
_CONSTRUCT_STARTS = re.compile(r"[<\[&]")

# How each kind reads, one and many.
_WORDS = {
    "html_comments": ("HTML comment", "HTML comments"),
    "invisible_characters": ("invisible character", "invisible characters"),
    "image_alt_texts": ("image alt text", "image alt texts"),
    "link_titles": ("link title", "link titles"),
    "html_attributes": ("HTML attribute", "HTML attributes"),
    "link_definitions": ("unused link definition", "unused link definitions"),
    "unread_lines": ("line nested too deep to read", "lines nested too deep to read"),
    "script_elements": ("script element", "script elements"),
}


@dataclass(frozen=True)
class Removed:
    """How much of each hidden kind was removed."""

    html_comments: int = 0
    invisible_characters: int = 0
    image_alt_texts: int = 0
    link_titles: int = 0
    html_attributes: int = 0
    link_definitions: int = 0
    unread_lines: int = 0
    script_elements: int = 0

    @classmethod
    def of(cls, counts: Counter[str]) -> Removed:
        return cls(**{f.name: counts[f.name] for f in fields(cls)})

    def __add__(self, other: Removed) -> Removed:
        return Removed(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))

    def note(self, where: str) -> str | None:
        """ "2 HTML comments and 14 invisible characters removed from `where`"; None: nothing."""
        said = []
        for f in fields(self):
            n = getattr(self, f.name)
            if n:
                one, many = _WORDS[f.name]
                said.append(f"{n:,} {one if n == 1 else many}")
        if not said:
            return None
        listed = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
        return f"{listed} removed from {where}"


@dataclass(frozen=True)
class Cleaned:
    text: str
    removed: Removed


def clean(markdown: str) -> Cleaned:
    """`markdown` without what GitHub's page does not show its reader."""
    text = _NEWLINES.sub("\n", markdown)  # as GitHub reads it: not counted, nothing hides
    counts: Counter[str] = Counter()
    for _ in range(MAX_PASSES):
        cleaned, invisible = remove_invisible(text)
        counts["invisible_characters"] += invisible
        if _CONSTRUCT_STARTS.search(cleaned):
            cleaned, found = hidden_html.apply(cleaned, hidden_edits(cleaned))
            counts += found
        if cleaned == text:
            break
        text = cleaned
    return Cleaned(text, Removed.of(counts))


def clean_line(text: str) -> Cleaned:
    """A one-line text (a title) without its invisible characters; no Markdown is read."""
    cleaned, invisible = remove_invisible(text)
    return Cleaned(cleaned, Removed(invisible_characters=invisible))
