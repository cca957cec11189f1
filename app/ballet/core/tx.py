"""A transition in progress: the record as it is being rebuilt, and the
effects emitted so far. `machine.advance` makes one per event; the moves in
`steps` and the handlers change it; nothing is returned until it is done.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ballet.core import render
from ballet.core.effects import AnyEffect, CommentKind, MarkerKey, PostComment, PostReply
from ballet.core.record import Record


class Tx:
    def __init__(self, record: Record | None, now: datetime) -> None:
        self._rec = record
        self.now = now
        self.effects: list[AnyEffect] = []

    @property
    def rec(self) -> Record:
        assert self._rec is not None, "the ticket record is created by TicketRequested"
        return self._rec

    def begin(self, record: Record) -> None:
        """The new ticket's first record (only `TicketRequested` makes one)."""
        self._rec = record

    def set(self, **changes: Any) -> None:
        self._rec = self.rec.model_copy(update=changes)

    def emit(self, *effects: AnyEffect) -> None:
        self.effects.extend(effects)

    @property
    def number(self) -> int:
        """Where comments go: the PR once it exists, else the issue."""
        return self.rec.pr_number or self.rec.ticket.number

    def marker(self, kind: CommentKind, extra: str = "") -> MarkerKey:
        rec = self.rec
        return MarkerKey(
            ticket=rec.key,
            kind=kind,
            stage=rec.stage or "",
            iteration=rec.iteration,
            attempt=rec.attempt,
            extra=extra,
        )

    def comment(self, kind: CommentKind, body: str, extra: str = "") -> None:
        key = self.marker(kind, extra)
        self.emit(
            PostComment(
                repo=self.rec.ticket.repo,
                number=self.number,
                marker=key,
                body=render.with_marker(body, key.render()),
            )
        )

    def announce(self, tag: str, body: str) -> None:
        """A sign-off change: the transition's version keeps each one a comment of its own."""
        self.comment("signoffs", body, extra=f"{tag}@v{self.rec.version + 1}")

    def reply(self, comment_id: int | None, tag: str, body: str) -> None:
        if comment_id is None:
            return  # a command from the web pages: no comment to reply on
        # One comment may hold several commands: each gets its own reply.
        key = self.marker("reply", extra=f"{comment_id}:{tag}")
        self.emit(
            PostReply(
                repo=self.rec.ticket.repo,
                number=self.number,
                in_reply_to=comment_id,
                marker=key,
                body=render.with_marker(body, key.render()),
            )
        )
