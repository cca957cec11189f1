"""Branch names from the pipeline's template: safe git refs from hostile titles."""

from __future__ import annotations

import re
import unicodedata

SLUG_MAX = 40
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slugify(text: str, max_length: int = SLUG_MAX) -> str:
    """Lowercase ASCII words joined by '-': never a character git refuses in a ref."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = _NOT_SLUG.sub("-", ascii_text.lower()).strip("-")
    return slug[:max_length].rstrip("-") or "ticket"


def branch_name(template: str, ticket: int, title: str, ticket_type: str) -> str:
    # The template was validated to name only these placeholders; each value is
    # slug-safe, so the ref is safe whatever the title says.
    return template.format(ticket=ticket, slug=slugify(title), type=slugify(ticket_type))
