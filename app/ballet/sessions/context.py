"""BALLET_CONTEXT: the JSON document describing the session's ticket and stage.

A later phase of a phased stage is seeded only with the previous phase's
handoff: the earlier stage reports were the first phase's input and reach
the later phases only through the handoffs. Answers to questions are always
included, since a question may be raised, and answered, in any phase.
"""

from __future__ import annotations

from typing import Any

from ballet.sessions.spec import EarlierReport, RunnerSpec

CONTEXT_VERSION = 1


def visible_reports(spec: RunnerSpec) -> tuple[EarlierReport, ...]:
    if spec.phase is not None and spec.handoff is not None:
        return ()
    return spec.earlier_reports


def build_context(spec: RunnerSpec) -> dict[str, Any]:
    ticket = spec.ticket
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
        },
        "pipeline": {"name": spec.pipeline_name, "version": spec.pipeline_version},
        "branch": spec.branch,
        "base": spec.base,
        "pr_number": spec.pr_number,
        "earlier_reports": [r.model_dump(mode="json") for r in visible_reports(spec)],
        "answers": [a.model_dump(mode="json") for a in spec.answers],
        "handoff": spec.handoff.model_dump(mode="json") if spec.handoff else None,
    }
