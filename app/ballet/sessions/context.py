"""BALLET_CONTEXT: the JSON document describing the session's ticket and stage.

A later phase of a phased stage is seeded only with the previous phase's
handoff: the earlier stage reports were the first phase's input and reach
the later phases only through the handoffs. Answers to questions are always
included, since a question may be raised, and answered, in any phase.
The epic and lineage (`ballet.core.lineage`) are bounded where they are built.
"""

from __future__ import annotations

from typing import Any

from ballet.core.lineage import TicketLinks
from ballet.sessions.spec import EarlierReport, RunnerSpec

CONTEXT_VERSION = 1


def visible_reports(spec: RunnerSpec) -> tuple[EarlierReport, ...]:
    if spec.phase is not None and spec.handoff is not None:
        return ()
    return spec.earlier_reports


def ticket_links(spec: RunnerSpec) -> TicketLinks:
    """The epic and lineage, without the ticket's own pull request (it is `pr_number`)."""
    links, pr = spec.links, spec.pr_number
    own = (spec.ticket.repo.lower(), pr)
    kept = tuple(i for i in links.lineage if (i.repo.lower(), i.number) != own)
    return links.model_copy(update={"lineage": kept})


def build_context(spec: RunnerSpec) -> dict[str, Any]:
    ticket = spec.ticket
    links = ticket_links(spec)
    return {
        "version": CONTEXT_VERSION,
        "ticket": {
            "repo": ticket.repo,
            "number": ticket.number,
            "title": ticket.title,
            "body": ticket.body,
            "labels": list(ticket.labels),
            "author": ticket.author,
            "url": ticket.url,
        },
        "stage": {
            "id": spec.stage.id,
            "kind": spec.stage.kind,
            "skills": list(spec.stage.skills),
            "iteration": spec.iteration,
            "attempt": spec.attempt,
            "phase": spec.phase,
            "outcomes": dict(spec.stage.outcomes),
        },
        "pipeline": {"name": spec.pipeline_name, "version": spec.pipeline_version},
        "branch": spec.branch,
        "base": spec.base,
        "update_with": spec.update_with,
        "pr_number": spec.pr_number,
        "earlier_reports": [r.model_dump(mode="json") for r in visible_reports(spec)],
        "answers": [a.model_dump(mode="json") for a in spec.answers],
        "handoff": spec.handoff.model_dump(mode="json") if spec.handoff else None,
        "epic": links.epic.model_dump(mode="json") if links.epic else None,
        "lineage": [item.model_dump(mode="json") for item in links.lineage],
        "lineage_left_out": links.lineage_left_out,
        "returned": [r.model_dump(mode="json") for r in spec.returned],
        "signoffs": spec.signoffs.model_dump(mode="json"),
        "hidden_text_removed": list(spec.hidden_text),
    }
