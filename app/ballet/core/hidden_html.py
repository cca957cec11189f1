"""What a reader of GitHub never sees of raw HTML in Markdown: comments and attributes.

Raw HTML in an issue reaches its reader through GitHub's sanitiser and a
browser: a comment is never shown, and an attribute (`alt`, `title`, `data-*`)
is not text on the page. Here such a fragment keeps its tags and the text
between them, and loses its comments (and the other constructs a browser reads
as comments: `<!…>`, `<?…>`, CDATA) and every attribute but a link's `href`
and a picture's `src`, which a Markdown link or image keeps too.

A browser reads tags leniently, so this does: a tag runs from `<name` to the
first `>` outside quotes. What a browser would swallow to the end of the page
(a comment, a tag or a quoted value never closed) is reported as `hides_rest`.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass

from ballet.core.invisible_text import INVISIBLE_CHARACTERS, only_invisible

HTML_COMMENTS = "html_comments"
HTML_ATTRIBUTES = "html_attributes"
SCRIPT_ELEMENTS = "script_elements"
# GitHub's sanitiser drops a script element with its contents: the reader sees none of it.
SCRIPT_OPEN = re.compile(r"<script(?=[\s/>]|$)", re.IGNORECASE)
SCRIPT_CLOSE = re.compile(r"</script\s*>", re.IGNORECASE)

_CONSTRUCT = re.compile(
    r"(?P<comment><!--(?:-?>|[\s\S]*?--!?>))"
    r"|(?P<open_comment><!--)"
    r"|(?P<bogus><[!?][^>]*>?)"
    r"|(?P<tag></?(?P<name>[A-Za-z][A-Za-z0-9-]*)"
    r"(?P<attrs>(?:[^>\"']|\"[^\"]*\"?|'[^']*'?)*)(?P<end>>?))"
    r"|(?P<entity>&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});)"
)
_ATTRIBUTE = re.compile(r"(?P<name>[^\s\"'>/=]+)(?:\s*=\s*(?:\"[^\"]*\"?|'[^']*'?|[^\s\"'>]*))?")
# The attributes a reader acts on, kept as Markdown's own links and images keep them.
_KEPT = {
    ("a", "href"),
    ("area", "href"),
    ("img", "src"),
    ("source", "src"),
    ("video", "src"),
    ("audio", "src"),
}


@dataclass(frozen=True)
class Edit:
    """One change to a text: `start:end` becomes `text`, removing what `removed` counts."""

    start: int
    end: int
    text: str
    removed: tuple[tuple[str, int], ...] = ()


def apply(text: str, edits: list[Edit]) -> tuple[str, Counter[str]]:
    """`text` with `edits` made; one inside another's range is dropped (its text goes
    with the outer one), and one overlapping another's end extends it."""
    out: list[str] = []
    counts: Counter[str] = Counter()
    at = 0
    for edit in sorted(edits, key=lambda e: (e.start, -e.end)):
        if edit.start < at and edit.end <= at:
            continue
        for kind, n in edit.removed:
            counts[kind] += n
        if edit.start < at:  # overlaps the previous edit's end: remove on to its own end
            at = edit.end
            continue
        out += [text[at : edit.start], edit.text]
        at = edit.end
    out.append(text[at:])
    return "".join(out), counts


def rewrite(fragment: str) -> tuple[list[Edit], bool]:
    """The edits removing `fragment`'s comments, attributes and entities of invisible
    characters, and whether a browser would hide the rest of the page after it."""
    edits: list[Edit] = []
    at = 0
    while (match := _CONSTRUCT.search(fragment, at)) is not None:
        start, end, kind = match.start(), match.end(), match.lastgroup
        at = max(end, start + 1)
        if kind == "tag" and SCRIPT_OPEN.match(match.group()):
            closed = SCRIPT_CLOSE.search(fragment, end)
            if closed is None:  # the sanitiser drops the rest with it
                edits.append(Edit(start, len(fragment), "", ((SCRIPT_ELEMENTS, 1),)))
                return edits, True
            at = closed.end()
            edits.append(Edit(start, at, joint(fragment, start, at), ((SCRIPT_ELEMENTS, 1),)))
            continue
        gap = joint(fragment, start, end)
        if kind == "comment" or (kind == "bogus" and match.group().endswith(">")):
            edits.append(Edit(start, end, gap, ((HTML_COMMENTS, 1),)))
        elif kind in ("open_comment", "bogus"):
            edits.append(Edit(start, len(fragment), "", ((HTML_COMMENTS, 1),)))
            return edits, True
        elif match["entity"] is not None:
            decoded = html.unescape(match.group())
            if decoded != match.group() and only_invisible(decoded):
                edits.append(Edit(start, end, gap, ((INVISIBLE_CHARACTERS, len(decoded)),)))
        else:
            tag, dropped = _bare_tag(match)
            if not match["end"] or _open_quote(match["attrs"]):
                removed = ((HTML_ATTRIBUTES, max(dropped, 1)),)
                edits.append(Edit(start, len(fragment), "", removed))
                return edits, True
            if dropped:
                edits.append(Edit(start, end, tag, ((HTML_ATTRIBUTES, dropped),)))
    return edits, False


def joint(text: str, start: int, end: int) -> str:
    """What replaces a removed piece: nothing, or a space where the two sides would
    otherwise join into something new (`<!` and `-- x -->` into a comment)."""
    left = text[start - 1] if start > 0 else " "
    right = text[end] if end < len(text) else " "
    return "" if left.isspace() or right.isspace() else " "


def _bare_tag(match: re.Match[str]) -> tuple[str, int]:
    name = match["name"]
    closing = match.group().startswith("</")
    attrs = match["attrs"]
    kept: list[str] = []
    dropped = 0
    for attribute in _ATTRIBUTE.finditer(attrs):
        if not closing and (name.lower(), attribute["name"].lower()) in _KEPT:
            kept.append(attribute.group())
        else:
            dropped += 1
    slash = "/" if attrs.rstrip().endswith("/") and not closing else ""
    head = "</" if closing else "<"
    return f"{head}{name}{''.join(' ' + k for k in kept)}{slash}>", dropped


def _open_quote(attrs: str) -> bool:
    """A quoted value left open: the browser reads on to a quote further down the page."""
    for quoted in re.finditer(r"\"[^\"]*\"?|'[^']*'?", attrs):
        if len(quoted.group()) < 2 or quoted.group()[-1] != quoted.group()[0]:
            return True
    return False
