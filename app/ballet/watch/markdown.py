"""Reports, questions and answers as GitHub shows them: Markdown rendered, then sanitized.

An agent's report and a stranger's answer are text anyone could have written, so
what markdown-it makes of them (raw HTML passes through, as on GitHub) goes through
nh3's allowlist: the tags and attributes below and nothing else. No script or style
survives (their content is dropped too), no `on*` attribute, no `style`, no link
but http(s) and mailto, no image (the pages' CSP would refuse a remote one anyway).
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

# What GitHub's own sanitizer keeps of a comment, less images, media and forms.
TAGS = frozenset(
    {
        *("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote"),
        *("ul", "ol", "li", "dl", "dt", "dd", "pre", "code", "kbd", "samp", "var"),
        *("em", "strong", "b", "i", "s", "del", "ins", "sub", "sup", "mark", "q", "abbr"),
        *("a", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "details", "summary"),
    }
)
ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
    "code": {"class"},  # a fence's language, `language-python`
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
# Dropped with everything inside, not unwrapped into visible text.
DROPPED = frozenset({"script", "style", "template", "iframe", "object", "noscript", "textarea"})

_PARSER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


@lru_cache(maxsize=256)  # a page shows the same reports on every reload
def rendered(text: str) -> Markup:
    """`text` (GitHub-flavoured Markdown) as HTML safe to put in a page."""
    html = _PARSER.render(text)
    clean = nh3.clean(
        html,
        tags=set(TAGS),
        clean_content_tags=set(DROPPED),
        attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="nofollow noopener noreferrer",
        strip_comments=True,
    )
    return Markup(clean)  # sanitized just above, by the allowlist
