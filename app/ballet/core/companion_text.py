"""What people read of a ticket's pull requests in its companions: the tracking
comment's line and the companion pull request's body. Repository names are
`owner/name` as `.ballet.yml` validated them, so they need no escaping here."""

from __future__ import annotations

from ballet.core.record import CompanionPR, Record

_STATE_WORDS = {"open": "open", "merged": "merged ✅", "closed": "closed unmerged"}


def own_pr(rec: Record) -> str:
    """The ticket's own pull request, as GitHub links one from another repository."""
    return f"{rec.ticket.repo}#{rec.pr_number}" if rec.pr_number is not None else ""


def _named(pr: CompanionPR) -> str:
    return f"{pr.repo}#{pr.number}" if pr.number is not None else f"{pr.repo} (opening)"


def companions_line(rec: Record) -> str:
    """Every pull request of the ticket and its state, in landing order; empty
    for a ticket that changed no companion."""
    if not rec.companion_prs:
        return ""
    items = [
        f"{_named(pr)} {_STATE_WORDS[pr.state]} at `{pr.head_sha[:12]}`" for pr in rec.companion_prs
    ]
    if rec.pr_number is not None:
        items.append(f"{own_pr(rec)} (this one)")
    return "**Pull requests**, in landing order: " + "; ".join(items)


def companion_pr_body(rec: Record, repo: str) -> str:
    """The companion's pull request names the ticket and the others."""
    others = [own_pr(rec)] if rec.pr_number is not None else []
    others += [f"{p.repo}#{p.number}" for p in rec.companion_prs
               if p.repo != repo and p.number is not None]  # fmt: skip
    ticket = f"{rec.ticket.repo}#{rec.ticket.number}"
    with_ = f", with {', '.join(others)}" if others else ""
    return (
        f"Part of {ticket}{with_}.\n\nOpened by Ballet for @{rec.ticket.author}: the ticket "
        f"changes several repositories, and its pull requests land together, in the order "
        f"`.ballet.yml` `companions:` gives, once every one is green and approved."
    )
