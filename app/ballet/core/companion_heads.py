"""A companion's pull request got a new head that no session of the ticket pushed.

GitHub moves a companion's branch when it brings it up to date with its base (the
edge's `update-branch`: a landing's, or a base move's where the base's rules want
branches up to date, tickets/base_moves.py), and a person may push there.
The ticket keeps that head as the companion's, as it keeps its own pull request's
(`handlers.head_pushed`): the companion's merge names it (`expectedHeadOid`, the
merge's `sha`), its checks are heard for it, and an approval of the older head no
longer counts (core/landing_approval.py `unapproved`), so a landing waiting for
people names it again. A session's own push arrives after its result named the same
head, and changes nothing.
"""

from __future__ import annotations

from ballet.core import handlers, landing_approval
from ballet.core.events import HeadPushed
from ballet.core.handlers import IllegalEvent
from ballet.core.tx import Tx


def head_pushed(tx: Tx, ev: HeadPushed) -> None:
    rec = tx.rec
    if ev.repo is None or ev.repo == rec.ticket.repo:
        handlers.head_pushed(tx, ev)
        return
    prs = rec.companion_prs
    at = next((i for i, p in enumerate(prs) if p.repo == ev.repo), None)
    if at is None or prs[at].number is None:
        raise IllegalEvent(f"{ev.repo} has no pull request of this ticket")
    pr = prs[at]
    if pr.state != "open":
        raise IllegalEvent(f"{ev.repo}#{pr.number} is {pr.state}: its head is not landed")
    if ev.sha == pr.head_sha:
        raise IllegalEvent(f"{ev.sha} is already the known head of {ev.repo}#{pr.number}")
    tx.set(companion_prs=rec.with_companion_pr(pr.model_copy(update={"head_sha": ev.sha})))
    if landing_approval.awaiting_approval(rec):
        landing_approval.await_approval(tx, ask=False)  # names its new head to approve
