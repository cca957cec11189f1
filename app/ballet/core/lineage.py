"""A ticket's epic and lineage: what its sessions know of the issues around it.

The epic is the issue's parent (GitHub's sub-issues): its title, description and
acceptance criteria, and its other sub-issues with their state and, for those
Ballet ran, how that went. The lineage is the issues and pull requests the
ticket names in its description and comments, and those that name it (GitHub's
timeline cross-references).

Only writers' words reach a session: a linked item's title (and the epic's
description) is shown when a writer (write, maintain or admin on the ticket's
repository; never a bot) wrote the item or named it here, or it is Ballet's own pull
request in the ticket's repository (titled from an issue a writer there labelled),
and withheld otherwise,
the item kept by number, kind and state. The ticket's description counts as named
by a writer: the writer who labelled the ticket stands behind it. A comment's
references are its author's; an item naming the ticket is its author's reference.

Pure: the edge fetches and asks GitHub who is a writer, these functions decide
what is shown, pick, order and bound. Everything is bounded, so a huge epic is
summarised (its description cut, its sub-issues counted past a limit) and never
fills a session's context or prompt.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
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
    author: str = ""  # the login that opened it; "" when GitHub did not say


class Vouched(Item):
    """An item as a session sees it: `by_writer` False, a writer neither wrote it nor
    named it here, and its title (an epic's description too) is withheld, left empty."""

    by_writer: bool = False


class BalletRun(Frozen):
    """How a ticket Ballet ran stands: its status and pull request, when known."""

    status: str  # running, waiting, question, paused, done, failed, cancelled
    pr_number: int | None = None
    pr_url: str | None = None


class SubIssue(Vouched):
    ballet: BalletRun | None = None  # None: Ballet never ran it (as far as it knows)


class Epic(Vouched):
    body: str
    body_cut: bool = False  # the description was longer; `url` has all of it
    acceptance_criteria: str | None = None
    sub_issues: tuple[SubIssue, ...] = ()  # the epic's other sub-issues, GitHub's order
    sub_issues_total: int = 0  # all of them, this ticket included
    sub_issues_left_out: int = 0  # other sub-issues past MAX_SUB_ISSUES


class LinkedItem(Vouched):
    relation: Relation


class Reference(Frozen):
    """An item the ticket's text names, and who named it."""

    ref: Ref
    in_body: bool = False  # the ticket's description names it
    named_by: tuple[str, ...] = ()  # the authors of the comments that name it, in order


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


def ticket_references(ref: Ref, body: str, comments: Iterable[tuple[str, str]]) -> list[Reference]:
    """What the ticket's description and people's comments (author, text) name, the
    ticket itself aside, in order, each once with everyone who named it."""
    repo, number = ref
    own = (repo.lower(), number)
    found: dict[Ref, Reference] = {
        r: Reference(ref=r, in_body=True) for r in references(body, repo)
    }
    for author, text in comments:
        if BALLET_MARKER in text:
            continue
        for r in references(text, repo):
            known = found.setdefault(r, Reference(ref=r))
            if author not in known.named_by:
                found[r] = known.model_copy(update={"named_by": (*known.named_by, author)})
    return [reference for r, reference in found.items() if r != own]


def is_bot(login: str) -> bool:
    return login.casefold().endswith("[bot]")


def may_be_writer(login: str) -> bool:
    """Whether GitHub is worth asking: bots and unknown authors never count as writers."""
    return bool(login) and not is_bot(login)


def is_writer(login: str, writers: Collection[str]) -> bool:
    """`writers`: the logins (casefolded) GitHub said have write permission."""
    return may_be_writer(login) and login.casefold() in writers


def vouchers(item: Item, reference: Reference | None) -> tuple[str, ...]:
    """Whose write permission would show `item`, in the order worth asking: () when
    the ticket's description names it (no one need be asked)."""
    if reference is not None and reference.in_body:
        return ()
    named_by = reference.named_by if reference is not None else ()
    logins = (*named_by, item.author)
    return tuple(dict.fromkeys(login for login in logins if may_be_writer(login)))


def by_writer(
    item: Item,
    reference: Reference | None,
    writers: Collection[str],
    ballet: BalletIn | None = None,
) -> bool:
    """A writer wrote `item`, or named it in the ticket (its description, their
    comment), or it is Ballet's own pull request in the ticket's repository."""
    if reference is not None and reference.in_body:
        return True
    if ballet is not None and by_ballet(item, ballet):
        return True
    return any(is_writer(login, writers) for login in vouchers(item, reference))


class BalletIn(BaseModel):
    """Ballet's own bot (`login`, e.g. `ballet-app[bot]`) in the ticket's repository."""

    model_config = ConfigDict(frozen=True)
    login: str
    repo: str


def by_ballet(item: Item, ballet: BalletIn) -> bool:
    """Ballet's pull requests are titled from an issue a writer of that repository
    labelled; another repository's writers are not this one's, so only here."""
    return (
        item.kind == "pull_request"
        and bool(ballet.login)
        and item.author.casefold() == ballet.login.casefold()
        and item.repo.casefold() == ballet.repo.casefold()
    )


def clip(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + f"\n\n[… cut at {limit} of {len(text)} characters]", True


def _shown(item: Item, shown: bool) -> dict[str, object]:
    fields = item.model_dump(exclude={"relation", "ballet", "by_writer"})
    fields["title"] = clip(item.title, MAX_TITLE_CHARS)[0] if shown else ""
    fields["by_writer"] = shown
    return fields


def run_from_labels(labels: Sequence[str]) -> BalletRun | None:
    """What the `ballet:*` labels of an issue say of its ticket, when nothing else does."""
    for label in ("ballet:failed", "ballet:done", "ballet:question", "ballet:waiting"):
        if label in labels:
            return BalletRun(status=label.removeprefix("ballet:"))
    return BalletRun(status="running") if "ballet:running" in labels else None


def _other_subs(subs: Sequence[Item], ticket: Ref) -> list[Item]:
    own = (ticket[0].lower(), ticket[1])
    return [s for s in subs if (s.repo.lower(), s.number) != own]


def listed_sub_issues(subs: Sequence[Item], ticket: Ref) -> list[Item]:
    """The epic's other sub-issues a session is shown, in GitHub's order."""
    return _other_subs(subs, ticket)[:MAX_SUB_ISSUES]


def build_epic(
    parent: Item,
    body: str,
    subs: Sequence[Item],
    ticket: Ref,
    runs: Mapping[Ref, BalletRun],
    writers: Collection[str] = frozenset(),
) -> Epic:
    """The epic of `ticket`: `parent` with its description and its other sub-issues.
    The parent's author decides whether its title and description are shown, each
    sibling's own author its title (the sub-issue relation says nothing of who)."""
    others = _other_subs(subs, ticket)
    kept = [
        SubIssue(
            **_shown(s, is_writer(s.author, writers)),
            ballet=runs.get((s.repo.lower(), s.number)),
        )
        for s in others[:MAX_SUB_ISSUES]
    ]
    shown = is_writer(parent.author, writers)
    text, cut = clip(body, MAX_EPIC_BODY_CHARS) if shown else ("", False)
    criteria = acceptance_criteria(body) if shown else None
    return Epic(
        **_shown(parent, shown),
        body=text,
        body_cut=cut,
        acceptance_criteria=clip(criteria, MAX_CRITERIA_CHARS)[0] if criteria else None,
        sub_issues=tuple(kept),
        sub_issues_total=len(subs),
        sub_issues_left_out=len(others) - len(kept),
    )


def lineage_items(
    referenced: Sequence[Item], referencing: Sequence[Item], skip: Iterable[Ref]
) -> list[tuple[Item, Relation]]:
    """The items the lineage lists, what the ticket names first, each once, at most
    MAX_LINEAGE. `skip` holds what the context shows elsewhere (the ticket, its epic
    and siblings)."""
    return _gathered(referenced, referencing, skip)[:MAX_LINEAGE]


def _gathered(
    referenced: Sequence[Item], referencing: Sequence[Item], skip: Iterable[Ref]
) -> list[tuple[Item, Relation]]:
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
    return [(items[k], relation[k]) for k in items]


def build_lineage(
    referenced: Sequence[Item],
    referencing: Sequence[Item],
    skip: Iterable[Ref],
    *,
    named: Iterable[Reference] = (),
    writers: Collection[str] = frozenset(),
    ballet: BalletIn | None = None,
) -> tuple[tuple[LinkedItem, ...], int]:
    """The ticket's lineage (`lineage_items`) and how many items were left out; each
    item's title shown only when a writer wrote it or named it (`named`: who named
    what the ticket names; an item naming the ticket is its author's reference), or
    it is Ballet's own pull request in the ticket's repository (`ballet`)."""
    by_ref = {r.ref: r for r in named}
    gathered = _gathered(referenced, referencing, skip)
    linked = [
        LinkedItem(
            **_shown(item, by_writer(item, by_ref.get(_key(item)), writers, ballet)),
            relation=rel,
        )
        for item, rel in gathered[:MAX_LINEAGE]
    ]
    return tuple(linked), max(len(gathered) - MAX_LINEAGE, 0)


def _key(item: Item) -> Ref:
    return (item.repo.lower(), item.number)
