"""Where GitHub Markdown hides text from its reader, found by parsing, cut from the source.

markdown-it-py parses the text as GitHub does (CommonMark with tables and
strikethrough); its tokens say where each construct is, and the edits are made
to the original text, so what an agent gets back is the writer's Markdown with
only the hidden parts gone: fenced and indented code and code spans keep their
bytes (an HTML comment in code is shown on GitHub, and stays).

Hidden: HTML comments, script elements and raw HTML's attributes (`hidden_html`), an image's alt
text, a link's or image's title, a link definition (`[//]: # (…)` is the
Markdown comment; a used one is written into its links instead), and entities
spelling invisible characters. Block tokens carry line ranges and inline ones
none, so the inline rules that matter are wrapped to record where their match
began and ended in the inline text, which is then found on the source lines.
Lines the parser left unread (nested past `MAX_NESTING`) are removed, not trusted.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.common.utils import MD_TRIM_CHARS
from markdown_it.helpers import parseLinkDestination, parseLinkLabel
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.entity import entity
from markdown_it.rules_inline.html_inline import html_inline
from markdown_it.rules_inline.image import image
from markdown_it.rules_inline.link import link
from markdown_it.token import Token

from ballet.core import hidden_html
from ballet.core.hidden_html import Edit, joint
from ballet.core.invisible_text import INVISIBLE_CHARACTERS, only_invisible

IMAGE_ALT_TEXTS = "image_alt_texts"
LINK_TITLES = "link_titles"
LINK_DEFINITIONS = "link_definitions"
UNREAD_LINES = "unread_lines"
MAX_NESTING = 40  # containers deep; markdown-it skips what lies deeper

_SPAN = "ballet_span"  # (start, end, label end) of a wrapped rule's match, in the inline text
_LEAVES = {"paragraph_open", "heading_open", "fence", "code_block", "html_block", "hr"}
_LEAVES |= {"table_open", "definition"}
# A line with no content of its own: container markers, an empty list item.
_CONTENT_FREE = re.compile(r"(?:[ \t>]|[-+*](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$))*")
_Rule = Callable[[StateInline, bool], bool]


class Unmapped(Exception):
    """An inline text not found on its source lines as expected."""


def _spanned(rule: _Rule, label_at: int | None) -> _Rule:
    def spanned(state: StateInline, silent: bool) -> bool:
        if silent:
            return rule(state, silent)
        start, count = state.pos, len(state.tokens)
        if not rule(state, silent):
            return False
        end = state.pos
        label_end = -1
        if label_at is not None:  # where `]` closes the link's text or the image's alt
            label_end = parseLinkLabel(state, start + label_at, label_at == 0)
            state.pos = end
        for token in state.tokens[count:]:
            token.meta.setdefault(_SPAN, (start, end, label_end))
        return True

    return spanned


def _parser() -> MarkdownIt:
    options = {"maxNesting": MAX_NESTING, "inline_definitions": True, "store_labels": True}
    md = MarkdownIt("commonmark", options).enable(["table", "strikethrough"])
    md.disable("text_join")  # an entity stays a token of its own
    wrapped: dict[str, tuple[_Rule, int | None]] = {
        "link": (link, 0),
        "image": (image, 1),
        "html_inline": (html_inline, None),
        "entity": (entity, None),
    }
    for name, (rule, label_at) in wrapped.items():
        md.inline.ruler.at(name, _spanned(rule, label_at))
    return md


_MD = _parser()


def hidden_edits(text: str) -> list[Edit]:
    """The edits that remove what GitHub hides in `text` (newlines already `\\n`)."""
    env: dict[str, object] = {}
    tokens = _MD.parse(text, env)
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    source = _Source(text, lines, starts, {})
    edits: list[Edit] = []
    used: set[str] = set()
    covered = [False] * len(lines)
    for i, token in enumerate(tokens):
        if token.type in _LEAVES and token.map:
            for index in range(token.map[0], min(token.map[1], len(lines))):
                covered[index] = True
        if token.type == "html_block" and token.map:
            edits += _html_block(source, token)
        elif token.type == "inline" and token.map:
            edits += _inline(source, token, tokens[i - 1], used)
    references = env.get("references")
    first_maps: dict[str, object] = {}  # a label's first definition: the one links use
    if isinstance(references, dict):
        first_maps = {label: found.get("map") for label, found in references.items()}
    for token in tokens:
        if token.type == "definition" and token.map:
            edits.append(_definition(source, token, used, first_maps))
    return edits + _unread(source, covered)


@dataclass(frozen=True)
class _Source:
    text: str
    lines: list[str]
    starts: list[int]  # each line's offset in `text`; one more for the end
    cells: dict[int, int]  # a table row's line: the column after its last cell found

    def line(self, index: int) -> tuple[str, int]:
        if index >= len(self.lines):
            return "", len(self.text)
        return self.lines[index], self.starts[index]


def _html_block(source: _Source, token: Token) -> list[Edit]:
    assert token.map is not None
    content = token.content.removesuffix("\n")
    found, hides_rest = hidden_html.rewrite(content)
    if not found:
        return []
    at = _Mapper(source, content, token.map[0], "suffix", keep_last=True)
    edits = [Edit(at(e.start), at(e.end), e.text, e.removed) for e in found]
    if hides_rest:  # a browser reads the rest of the page as part of what was left open
        last = edits[-1]
        edits[-1] = Edit(last.start, len(source.text), "", last.removed)
    return edits


def _inline(source: _Source, token: Token, parent: Token, used: set[str]) -> list[Edit]:
    """Edits within one inline text, placed on its source lines."""
    assert token.map is not None
    content = token.content
    mode = "suffix"
    if parent.type in ("th_open", "td_open"):
        mode = "cell"
    elif parent.type == "heading_open" and parent.markup.startswith("#"):
        mode = "heading"
    local: list[Edit] = []
    children = token.children or []
    index = 0
    while index < len(children):
        child = children[index]
        index += 1
        if _SPAN not in child.meta:
            continue
        if child.type == "html_inline" and hidden_html.SCRIPT_OPEN.match(child.content):
            script, index = _script(content, children, index - 1)
            local.append(script)
            continue
        local += _child_edits(content, child, used)
    try:
        at = _Mapper(source, content, token.map[0], mode, keep_last=False)
    except Unmapped:
        return _searched(source, token, content, local) if local else []
    return [Edit(at(e.start), at(e.end), e.text, e.removed) for e in local]


def _script(content: str, children: list[Token], opened: int) -> tuple[Edit, int]:
    """An inline script element, from its tag to its end tag (else the inline text's
    end), with all between: the edit removing it, and the index of the child after it."""
    start = children[opened].meta[_SPAN][0]
    for index in range(opened + 1, len(children)):
        child = children[index]
        if child.type == "html_inline" and hidden_html.SCRIPT_CLOSE.match(child.content):
            end = child.meta[_SPAN][1] if _SPAN in child.meta else len(content)
            removed = ((hidden_html.SCRIPT_ELEMENTS, 1),)
            return Edit(start, end, joint(content, start, end), removed), index + 1
    end = len(content)
    return Edit(start, end, "", ((hidden_html.SCRIPT_ELEMENTS, 1),)), len(children)


def _child_edits(content: str, child: Token, used: set[str]) -> list[Edit]:
    start, end, label_end = child.meta[_SPAN]
    label = child.meta.get("label")
    if isinstance(label, str):
        used.add(label)
    if child.type == "html_inline":
        found, _ = hidden_html.rewrite(child.content)
        if not found:
            return []
        text, removed = hidden_html.apply(child.content, found)
        return [Edit(start, end, text or joint(content, start, end), tuple(removed.items()))]
    if child.type == "text_special" and child.info == "entity":
        if not only_invisible(child.content):
            return []
        gap = joint(content, start, end)
        return [Edit(start, end, gap, ((INVISIBLE_CHARACTERS, len(child.content)),))]
    if child.type == "link_open" and label_end >= 0:
        tail = _tail(content, child, end, label_end, isinstance(label, str), "href")
        return [tail] if tail is not None else []
    if child.type == "image" and label_end >= 0:
        tail = _tail(content, child, end, label_end, isinstance(label, str), "src")
        alt = ((IMAGE_ALT_TEXTS, 1),) if child.content.strip() else ()
        if tail is None and not alt:
            return []
        rest = tail.text if tail is not None else content[label_end + 1 : end]
        return [Edit(start, end, "![]" + rest, alt + (tail.removed if tail else ()))]
    return []


def _tail(
    content: str, child: Token, end: int, label_end: int, reference: bool, attr: str
) -> Edit | None:
    """The part after a link's or image's `]`, changed: a reference is written inline
    (its definition goes), a title goes; None: it stays."""
    if reference:
        return Edit(label_end + 1, end, f"(<{child.attrs.get(attr, '')}>)")
    if not child.attrs.get("title"):
        return None
    pos = label_end + 2
    while pos < end and content[pos] in " \t\n":
        pos += 1
    dest_end = parseLinkDestination(content, pos, end).pos
    return Edit(label_end + 1, end, content[label_end + 1 : dest_end] + ")", ((LINK_TITLES, 1),))


def _definition(
    source: _Source, token: Token, used: set[str], first_maps: dict[str, object]
) -> Edit:
    """A link definition is never shown: removed, its address written into its links."""
    assert token.map is not None
    first, start = source.line(token.map[0])
    last, last_start = source.line(token.map[1] - 1)
    label = token.meta.get("id")
    removed: tuple[tuple[str, int], ...] = ((LINK_DEFINITIONS, 1),)
    if label in used and first_maps.get(str(label)) == token.map:
        removed = ((LINK_TITLES, 1),) if token.meta.get("title") else ()
    return Edit(start + max(first.find("["), 0), last_start + len(last), "", removed)


def _unread(source: _Source, covered: list[bool]) -> list[Edit]:
    edits = []
    for index, line in enumerate(source.lines):
        if not covered[index] and line.strip() and not _CONTENT_FREE.fullmatch(line):
            start = source.starts[index]
            edits.append(Edit(start, start + len(line), "", ((UNREAD_LINES, 1),)))
    return edits


class _Mapper:
    """Offsets in an inline (or HTML block) text to offsets in the source: each of its
    lines is a piece of one source line, after that line's container markers."""

    def __init__(self, source: _Source, content: str, first: int, mode: str, *, keep_last: bool):
        self.places: list[tuple[int, int, int]] = []  # (content offset, source offset, pad)
        self.offsets: list[int] = []
        offset = 0
        pieces = content.split("\n")
        for i, piece in enumerate(pieces):
            line, line_start = source.line(first + i)
            last = i == len(pieces) - 1 and not keep_last
            column, pad = _locate(line, piece, mode, last, source.cells.get(first + i, 0))
            if mode == "cell":
                source.cells[first + i] = column + len(piece)
            self.places.append((offset, line_start + column, pad))
            self.offsets.append(offset)
            offset += len(piece) + 1

    def __call__(self, offset: int) -> int:
        index = bisect_right(self.offsets, offset) - 1
        if index < 0:
            raise Unmapped(offset)
        content_at, source_at, pad = self.places[index]
        return source_at + max(offset - content_at - pad, 0)


def _locate(line: str, piece: str, mode: str, last: bool, after: int) -> tuple[int, int]:
    """Where `piece` is on its source `line`, and how many spaces it has that the line
    does not (a tab's columns); `after`: a table row's column past its last cell."""
    if mode in ("heading", "cell"):
        if mode == "heading":
            after = line.find("#")
            while 0 <= after < len(line) and line[after] == "#":
                after += 1
        found = line.find(piece, max(after, 0))
        if found < 0:
            raise Unmapped(piece)
        return found, 0
    whole = line.rstrip(MD_TRIM_CHARS) if last else line
    for pad in range(4):
        if pad and not piece[:pad].isspace():
            break
        if whole.endswith(piece[pad:]):
            return len(whole) - len(piece) + pad, pad
    raise Unmapped(piece)


def _searched(source: _Source, token: Token, content: str, local: list[Edit]) -> list[Edit]:
    """An inline text not laid out as expected (a table cell's `\\|`): each edit's own
    source text is looked for on its lines; not found, those lines are not trusted."""
    assert token.map is not None
    begin = source.starts[token.map[0]]
    end = source.starts[min(token.map[1], len(source.lines))] - 1
    unread = Edit(begin, max(end, begin), "", ((UNREAD_LINES, token.map[1] - token.map[0]),))
    edits: list[Edit] = []
    at = begin
    for e in local:
        found = source.text.find(content[e.start : e.end], at, end + 1)
        if found < 0 or e.end == e.start:
            return [unread]
        edits.append(Edit(found, found + e.end - e.start, e.text, e.removed))
        at = found + e.end - e.start
    return edits
