"""What people read of a ticket's pull requests in its companions: the tracking
comment's line, and each pull request's body naming the others. Repository names are
`owner/name` as `.ballet.yml` validated them, so they need no escaping here."""

from __future__ import annotations

from ballet.core.companion_reds import red_on_head
from ballet.core.effects import LinkPullRequest
from ballet.core.record import CompanionPR, Record

_STATE_WORDS = {"open": "open", "merged": "merged ✅", "closed": "closed unmerged"}


def own_pr(rec: Record) -> str:
    """The ticket's own pull request, as GitHub links one from another repository."""
    return f"{rec.ticket.repo}#{rec.pr_number}" if rec.pr_number is not None else ""


def _named(pr: CompanionPR) -> str:
    return f"{pr.repo}#{pr.number}" if pr.number is not None else f"{pr.repo} (opening)"


def _red(pr: CompanionPR) -> str:
    """Its head's checks were heard red (core/companion_reds.py): the landing returns it."""
    summary = red_on_head(pr)
    return f" (red checks: {' '.join(summary.split())})" if summary is not None else ""


def companions_line(rec: Record) -> str:
    """Every pull request of the ticket and its state, in landing order; empty
    for a ticket that changed no companion."""
    if not rec.companion_prs:
        return ""
    items = [
        f"{_named(pr)} {_STATE_WORDS[pr.state]} at `{pr.head_sha[:12]}`{_red(pr)}"
        for pr in rec.companion_prs
    ]
    if rec.pr_number is not None:
        items.append(f"{own_pr(rec)} (this one)")
    return "**Pull requests**, in landing order: " + "; ".join(items)


# Ballet's block in a pull request's body: the ticket and its other pull requests.
# Rewritten as pull requests open (`LinkPullRequest`); what a person wrote outside
# it is theirs and stays.
LINKS_OPEN = "<!-- ballet:links -->"
LINKS_CLOSE = "<!-- /ballet:links -->"


def links_line(rec: Record, repo: str) -> str:
    """ "Part of acme/app#12, with acme/app#13, acme/api#34." for the pull request in
    `repo`: every other pull request of the ticket, its own first, then landing order."""
    ticket = f"{rec.ticket.repo}#{rec.ticket.number}"
    others = [own_pr(rec)] if rec.pr_number is not None and repo != rec.ticket.repo else []
    others += [f"{p.repo}#{p.number}" for p in rec.companion_prs
               if p.repo != repo and p.number is not None and p.state != "closed"]  # fmt: skip
    with_ = f", with {', '.join(others)}" if others else ""
    return f"Part of {ticket}{with_}."


def links_block(rec: Record, repo: str) -> str:
    return f"{LINKS_OPEN}\n{links_line(rec, repo)}\n{LINKS_CLOSE}"


def with_links(body: str, block: str) -> str:
    """`body` with Ballet's block replaced by `block` (added at its end if a person
    removed it); the rest of the body as it was."""
    start, end = body.find(LINKS_OPEN), body.find(LINKS_CLOSE)
    if start == -1 or end < start:
        return f"{body.rstrip()}\n\n{block}" if body.strip() else block
    return body[:start] + block + body[end + len(LINKS_CLOSE) :]


def link_effects(rec: Record) -> list[LinkPullRequest]:
    """Every pull request of the ticket names all the others: written again as one
    opens (the edge writes only a block that changed, so a repeat writes nothing)."""
    if not rec.companion_prs:
        return []
    prs = [(p.repo, p.number) for p in rec.companion_prs if p.number is not None
           and p.state == "open"]  # fmt: skip
    if rec.pr_number is not None:
        prs.append((rec.ticket.repo, rec.pr_number))
    return [LinkPullRequest(repo=repo, number=n, block=links_block(rec, repo)) for repo, n in prs]


def companion_pr_body(rec: Record, repo: str) -> str:
    """The companion's pull request names the ticket and the others."""
    return (
        f"{links_block(rec, repo)}\n\nOpened by Ballet for @{rec.ticket.author}: the ticket "
        f"changes several repositories, and its pull requests land together, in the order "
        f"`.ballet.yml` `companions:` gives, once every one is green and approved."
    )
