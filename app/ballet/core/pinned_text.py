"""The ticket's text: the issue's title and body as a writer stood behind them.

A ticket starts from what the person who labelled it read, so the title and
body are pinned then, and sessions are given the pinned text rather than the
issue as it is when they run (on a public repository the issue's author may
be anyone, and may edit it after the label). A writer's edit, or a writer's
`/ballet refresh`, adopts the issue's current text (`core/edits.py`).

The record in Redis keeps the words; the tracking comment's state block keeps
only their digest, who adopted them and when (an issue body alone can fill a
GitHub comment). A record rebuilt from GitHub gets its words back from the
issue when the issue still has the pinned digest; otherwise they are unknown,
and no session starts until a writer adopts the issue's current text.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

# How the pinned text came to be: the label that started the ticket, a writer's
# edit of the issue, or a writer's `/ballet refresh`.
Adopted = Literal["labelled", "edited", "refreshed"]
# What the tracking comment's state block leaves out of the pinned text.
WORDS = frozenset({"title", "body"})


class PinnedText(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    digest: str  # of the title and body (`text_digest`)
    by: str  # the login whose label, edit or refresh adopted it
    how: Adopted
    at: datetime
    # The words; None in a record rebuilt from GitHub until the issue gives them back.
    title: str | None = None
    body: str | None = None
    # An edit by someone without write permission was answered on the issue; the
    # notice is not posted again until a writer adopts a new text.
    noticed: bool = False

    @property
    def known(self) -> bool:
        return self.title is not None and self.body is not None


def text_digest(title: str, body: str) -> str:
    """One digest of the title and body together (as JSON, so no two pairs share one)."""
    data = json.dumps([title, body], ensure_ascii=False).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def pin(title: str, body: str, by: str, how: Adopted, at: datetime) -> PinnedText:
    return PinnedText(
        digest=text_digest(title, body), by=by, how=how, at=at, title=title, body=body
    )


def is_pinned(text: PinnedText, title: str, body: str) -> bool:
    """Whether the issue's title and body are the pinned ones."""
    return text.digest == text_digest(title, body)


def restored(text: PinnedText, title: str, body: str) -> PinnedText:
    """The pinned text with its words back, when the issue still has the pinned
    digest; unchanged (unknown words) when the issue's text is another."""
    if text.known or not is_pinned(text, title, body):
        return text
    return text.model_copy(update={"title": title, "body": body})


# The question a ticket asks instead of starting a session when its record came
# back from GitHub without its words and the text is no longer the pinned
# one: which text a writer stood behind is then unknown (`steps.start_session`).
TEXT_LOST = (
    "the issue's title or body changed since the ticket's text was pinned, and Ballet "
    "lost its copy of the pinned text (its Redis data was lost), so it cannot tell "
    "whether a writer stands behind the change. Someone with write permission: read the "
    "issue, then `/ballet refresh` to adopt its current text; the stage then runs again"
)
