"""A ticket's epic and lineage: what its sessions know of the issues around it.

The epic is the issue's parent (GitHub's sub-issues): its title, description and
acceptance criteria, and its other sub-issues with their state and, for those
Ballet ran, how that went. The lineage is the issues and pull requests the
ticket names in its description and comments, and those that name it (GitHub's
timeline cross-references).

Pure: the edge fetches, these functions pick, order and bound. Everything is
bounded, so a huge epic is summarised (its description cut, its sub-issues
counted past a limit) and never fills a session's context or prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ballet.core.text import acceptance_criteria

MAX_TITLE_CHARS = 256
MAX_EPIC_BODY_CHARS = 6_000
MAX_CRITERIA_CHARS = 3_000
MAX_SUB_ISSUES = 50
MAX_LINEAGE = 30
# References in the ticket's text looked up one request each; the rest are dropped.
MAX_REFERENCE_LOOKUPS = 20

ItemKind = Literal["issue", "pull_request"]
ItemState = Literal["open", "closed", "merged"]
# referenced: the ticket names it; referencing: it names the ticket.
Relation = Literal["referenced", "referencing", "both"]
Ref = tuple[str, int]  # ("owner/name", number)


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Item(Frozen):
    """An issue or pull request as GitHub shows it."""

    repo: str
    number: int
    kind: ItemKind = "issue"
    title: str
    state: ItemState
    url: str


class BalletRun(Frozen):
    """How a ticket Ballet ran stands: its status and pull request, when known."""

    status: str  # running, waiting, question, paused, done, failed, cancelled
    pr_number: int | None = None
    pr_url: str | None = None


class SubIssue(Item):
    ballet: BalletRun | None = None  # None: Ballet never ran it (as far as it knows)


class Epic(Item):
    body: str
    body_cut: bool = False  # the description was longer; `url` has all of it
    acceptance_criteria: str | None = None
    sub_issues: tuple[SubIssue, ...] = ()  # the epic's other sub-issues, GitHub's order
    sub_issues_total: int = 0  # all of them, this ticket included
    sub_issues_left_out: int = 0  # other sub-issues past MAX_SUB_ISSUES


class LinkedItem(Item):
    relation: Relation


class TicketLinks(Frozen):
    epic: Epic | None = None
    lineage: tuple[LinkedItem, ...] = ()
    lineage_left_out: int = 0


# `#12`, `owner/name#12`, and issue or pull request URLs; not inside words or paths.
_SHORT = re.compile(r"(?<![\w/&#])(?:([\w.-]+/[\w.-]+))?#(\d+)\b")
_URL = re.compile(r"https?://[^\s/]+/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)\b")
_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# Ballet's own comments (tracking, reports) name the ticket's PR and runs: not lineage.
BALLET_MARKER = "<!-- ballet:"


def references(text: str, repo: str) -> list[Ref]:
    """The issues and pull requests `text` names, in order, without repeats; code is skipped."""
    text = _INLINE_CODE.sub(" ", _FENCE.sub(" ", text))
    found: list[tuple[int, Ref]] = []
    for match in _URL.finditer(text):
        found.append((match.start(), (match[1], int(match[2]))))
    bare = _URL.sub(lambda m: " " * len(m[0]), text)
    for match in _SHORT.finditer(bare):
        found.append((match.start(), (match[1] or repo, int(match[2]))))
    refs = [ref for _, ref in sorted(found)]
    return list(dict.fromkeys((r.lower(), n) for r, n in refs if n > 0))


def ticket_references(ref: Ref, body: str, comments: Iterable[str]) -> list[Ref]:
    """What the ticket's description and people's comments name, the ticket itself aside."""
    repo, number = ref
    texts = [body, *(c for c in comments if BALLET_MARKER not in c)]
    own = (repo.lower(), number)
    found = (r for text in texts for r in references(text, repo))
    return [r for r in dict.fromkeys(found) if r != own]


def clip(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + f"\n\n[… cut at {limit} of {len(text)} characters]", True


def _titled(item: Item) -> dict[str, object]:
    fields = item.model_dump(exclude={"relation", "ballet"})
    fields["title"] = clip(item.title, MAX_TITLE_CHARS)[0]
    return fields


def run_from_labels(labels: Sequence[str]) -> BalletRun | None:
    """What the `ballet:*` labels of an issue say of its ticket, when nothing else does."""
    for label in ("ballet:failed", "ballet:done", "ballet:question", "ballet:waiting"):
        if label in labels:
            return BalletRun(status=label.removeprefix("ballet:"))
    return BalletRun(status="running") if "ballet:running" in labels else None


def build_epic(
    parent: Item,
    body: str,
    subs: Sequence[Item],
    ticket: Ref,
    runs: Mapping[Ref, BalletRun],
) -> Epic:
    """The epic of `ticket`: `parent` with its description and its other sub-issues."""
    own = (ticket[0].lower(), ticket[1])
    others = [s for s in subs if (s.repo.lower(), s.number) != own]
    kept = [
        SubIssue(**_titled(s), ballet=runs.get((s.repo.lower(), s.number)))
        for s in others[:MAX_SUB_ISSUES]
    ]
    text, cut = clip(body, MAX_EPIC_BODY_CHARS)
    criteria = acceptance_criteria(body)
    return Epic(
        **_titled(parent),
        body=text,
        body_cut=cut,
        acceptance_criteria=clip(criteria, MAX_CRITERIA_CHARS)[0] if criteria else None,
        sub_issues=tuple(kept),
        sub_issues_total=len(subs),
        sub_issues_left_out=len(others) - len(kept),
    )


def build_lineage(
    referenced: Sequence[Item], referencing: Sequence[Item], skip: Iterable[Ref]
) -> tuple[tuple[LinkedItem, ...], int]:
    """The ticket's lineage, what it names first, and how many items were left out.

    `skip` holds what the context shows elsewhere (the ticket, its epic and siblings)."""
    skipped = {(r.lower(), n) for r, n in skip}
    items: dict[Ref, Item] = {}
    relation: dict[Ref, Relation] = {}
    groups: tuple[tuple[Sequence[Item], Relation], ...] = (
        (referenced, "referenced"),
        (referencing, "referencing"),
    )
    for group, name in groups:
        for item in group:
            key = (item.repo.lower(), item.number)
            if key in skipped:
                continue
            items.setdefault(key, item)
            relation[key] = name if relation.get(key, name) == name else "both"
    linked = [LinkedItem(**_titled(items[k]), relation=relation[k]) for k in items]
    return tuple(linked[:MAX_LINEAGE]), max(len(linked) - MAX_LINEAGE, 0)
