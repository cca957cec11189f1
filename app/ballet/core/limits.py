"""Bounds on what anyone may write into a ticket: a hostile title, comment or
report costs Ballet a bounded amount of memory, Redis and GitHub, and every
cut says so rather than silently dropping text.
"""

from __future__ import annotations

from ballet.core.report import Handoff

# GitHub's own limit on a pull request's title; a longer issue title (an API or
# an Enterprise server that allows one) is cut where it becomes the record's and the PR's.
TITLE_MAX = 256
# A stage run's summary as the record keeps it (the full report is its own comment).
RUN_SUMMARY_MAX = 2_000
# GitHub refuses comments over 65,536 characters; a margin for the marker and the notice.
COMMENT_MAX = 65_000
# Slash commands taken from one comment; the rest are refused with a reply.
COMMANDS_PER_COMMENT = 10
# What of a phase handoff the record carries to the next phase.
HANDOFF_TEXT_MAX = 20_000
HANDOFF_ITEMS_MAX = 50
HANDOFF_ITEM_MAX = 1_000


def clip(value: str, limit: int) -> str:
    """`value`, or its first `limit` characters and a note of how much was cut."""
    if len(value) <= limit:
        return value
    note = f" … [{len(value) - limit} more characters cut]"
    return value[: max(0, limit - len(note))] + note


def clip_handoff(handoff: Handoff | None) -> Handoff | None:
    if handoff is None:
        return None

    def items(values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(clip(v, HANDOFF_ITEM_MAX) for v in values[:HANDOFF_ITEMS_MAX])

    return Handoff(
        summary=clip(handoff.summary, HANDOFF_TEXT_MAX),
        decisions=items(handoff.decisions),
        constraints=items(handoff.constraints),
        open_questions=items(handoff.open_questions),
    )
