"""Webhook deliveries to intents: every (event, action) Ballet acts on, in one table.

The rule: a delivery whose (event, action) is in `TABLE` is read by that
row's reader (`readers.py`); any other is `Ignored` by name. A row marked
`repo=False` is about the installation, not one repository (GitHub sends
those to every App unasked); every other row needs an installation and a
repository, or the delivery is ignored with the reason. `ANY` matches every
action of an event, and events without actions (push, status) use it too.
The web app enqueues exactly the events of this table (`HANDLED_EVENTS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ballet.github import readers as r
from ballet.github.auto_merge import auto_merge_disabled
from ballet.github.forge import AppIdentity
from ballet.github.intents import Ignored, Intent
from ballet.github.payloads import parse_delivery
from ballet.github.webhook_models import Payload


@dataclass(frozen=True)
class Route:
    reader: r.Translator
    repo: bool = True  # False: about the installation; no repository needed


ANY = "*"

# fmt: off
TABLE: dict[tuple[str, str], Route] = {
    ("issues", "labeled"):                       Route(r.issue_labeled),
    ("issues", "edited"):                        Route(r.issue_edited),
    ("issue_comment", "created"):                Route(r.comment_created),
    ("pull_request", "closed"):                  Route(r.pr_closed),
    ("pull_request", "synchronize"):             Route(r.pr_pushed),
    ("pull_request", "opened"):                  Route(r.pr_pushed),
    ("pull_request", "reopened"):                Route(r.pr_pushed),
    ("pull_request", "dequeued"):                Route(r.pr_dequeued),
    ("pull_request", "auto_merge_disabled"):     Route(auto_merge_disabled),
    ("merge_group", "checks_requested"):         Route(r.merge_group_requested),
    ("pull_request_review", "submitted"):        Route(r.review_submitted),
    ("check_suite", "requested"):                Route(r.check_suite_started),
    ("check_suite", "rerequested"):              Route(r.check_suite_started),
    ("check_run", "created"):                    Route(r.check_run_created),
    ("check_suite", "completed"):                Route(r.check_suite_completed),
    ("workflow_run", "requested"):               Route(r.workflow_run_requested),
    ("workflow_run", "completed"):               Route(r.workflow_run_completed),
    ("status", ANY):                             Route(r.status),
    ("push", ANY):                               Route(r.push),
    ("installation", ANY):                       Route(r.installation, repo=False),
    ("installation_repositories", ANY):          Route(r.installation, repo=False),
}
# fmt: on

# What the web app enqueues; any other event is answered, counted and dropped.
HANDLED_EVENTS: frozenset[str] = frozenset(event for event, _ in TABLE)
# GitHub sends these to every App; an App manifest does not subscribe to them.
ALWAYS_DELIVERED: frozenset[str] = frozenset(
    event for (event, _), route in TABLE.items() if not route.repo
)


def translate(
    event: str,
    payload: Mapping[str, Any],
    *,
    app: AppIdentity,
    now: datetime,
    trusted_bots: frozenset[str] = frozenset(),
) -> tuple[Intent, ...]:
    """The intents of one delivery; never raises for a payload's shape. `trusted_bots`
    (BALLET_TRUSTED_BOTS, casefolded): the bots whose actions are read as a person's."""
    data = dict(payload)
    env = parse_delivery(event, data)
    name = f"{event}.{env.action or '-'}"
    route = TABLE.get((event, env.action or ANY)) or TABLE.get((event, ANY))
    if route is None:
        return (Ignored(f"{name} is not an event Ballet acts on"),)
    if env.installation_id is None:
        return (Ignored(f"{name} was not delivered to an App installation"),)
    repo = env.repository.full_name if env.repository else None
    if route.repo and not repo:
        return (Ignored(f"{name} names no repository"),)
    context = r.Context(
        env, Payload.model_validate(data), env.installation_id, repo or "", app, now, trusted_bots
    )
    return route.reader(context)
