"""Prometheus metrics of the web app and the worker, served at `GET /metrics`.

Every metric Ballet exports is defined here, so an operator reads one file to
know what exists. Label values are bounded: event and action names come only
from signed deliveries (GitHub's own vocabulary); event kinds, ticket
statuses, adapters and session results are the closed sets of `ballet.core`
and `ballet.sessions`; reasons are fixed here. Never a ticket, repository,
login or an agent's own words: each would be a new time series without end.

One process, one default registry: `ballet serve` shows the web's and the
worker's metrics together, and each process exports the whole set (a web-only
process shows session metrics at zero).
"""

from __future__ import annotations

from typing import Literal, get_args

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

from ballet.core.config import Adapter
from ballet.core.record import TERMINAL, Status

# -- webhook ingress and deliveries ---------------------------------------------------

WEBHOOK_DELIVERIES = Counter(
    "ballet_webhook_deliveries_total",
    "Signed webhook deliveries answered, by event and outcome"
    " (accepted, duplicate, ignored, ping).",
    ["event", "outcome"],
)
WEBHOOK_REJECTED = Counter(
    "ballet_webhook_rejected_total",
    "Webhook requests refused, by reason"
    " (signature, too_large, malformed, missing_header, queue_unavailable).",
    ["reason"],
)
DELIVERIES_HANDLED = Counter(
    "ballet_deliveries_handled_total",
    "Deliveries a worker handed to its consumer, by event and action.",
    ["event", "action"],
)
DELIVERIES_FAILED = Counter(
    "ballet_deliveries_failed_total",
    "Deliveries whose handling raised, by event (retried until the last try).",
    ["event"],
)

# -- tickets ----------------------------------------------------------------------------

TICKET_EVENTS = Counter(
    "ballet_ticket_events_total",
    "Domain events offered to a ticket's state machine, by event kind and result"
    " (applied; refused: the ticket's state does not take it, or there is no such ticket).",
    ["event", "result"],
)
TICKETS_ENDED = Counter(
    "ballet_tickets_ended_total",
    "Tickets that reached an end state, by status (done, failed, cancelled).",
    ["status"],
)

# -- agent sessions ----------------------------------------------------------------------

SessionEnd = Literal[
    "reported",  # the session wrote a valid report (whatever its outcome)
    # ballet.sessions.FailureReason, spelled out: a label set must be closed.
    "workspace",
    "runtime",
    "timeout",
    "exit_code",
    "missing_report",
    "invalid_report",
    "invalid_handoff",
    "push",
    "error",  # Ballet itself raised while running it (a bug, a lost disk): see the log
]
SESSIONS = Counter(
    "ballet_sessions_total",
    "Agent sessions that ended, by runtime adapter and result: reported, one of the"
    " failure reasons (timeout, exit_code, missing_report, invalid_report,"
    " invalid_handoff, workspace, runtime, push) or error (Ballet raised).",
    ["adapter", "result"],
)
# Agent sessions take seconds (a scripted agent) to hours (a long implement stage).
SESSION_BUCKETS = (10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0)
SESSION_SECONDS = Histogram(
    "ballet_session_seconds",
    "Wall time of agent sessions that ended with a result, by runtime adapter.",
    ["adapter"],
    buckets=SESSION_BUCKETS,
)
SESSION_EGRESS = Counter(
    "ballet_session_egress_total",
    "Connections confined sessions asked Ballet's egress proxy for, by decision"
    " (allowed, refused: not a listed destination, or a listed name resolving to a"
    " private address).",
    ["decision"],
)
SESSIONS_RUNNING = Gauge(
    "ballet_sessions_running",
    "Agent sessions running in this worker now, by runtime adapter.",
    ["adapter"],
)

# -- GitHub API ------------------------------------------------------------------------

GITHUB_REQUESTS = Counter(
    "ballet_github_requests_total",
    "HTTP requests sent to the GitHub API (retries and token requests included; cache"
    " hits are not sent), by method and status class (2xx, 3xx, 4xx, 5xx, error: no"
    " response).",
    ["method", "status_class"],
)
RateLimitKind = Literal["primary", "secondary"]
GITHUB_RATE_LIMITED = Counter(
    "ballet_github_rate_limited_total",
    "GitHub API responses that said a rate limit was hit, by kind (primary: the hourly"
    " quota is used up; secondary: too many requests too fast).",
    ["kind"],
)
# GitHub's own verbs; anything else (nothing Ballet sends) is folded into one value.
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})

# -- reconciler -------------------------------------------------------------------------

RECONCILER_CRASHED_SESSIONS = Counter(
    "ballet_reconciler_crashed_sessions_total",
    "Sessions the reconciler reported failed because their worker went away mid-session.",
)
LIVE_TICKETS = Gauge(
    "ballet_live_tickets",
    "Tickets not yet ended, as counted by the last reconciler sweep (set only in the"
    " worker that ran it; take the max across workers).",
)

# Series an operator alerts on exist at zero from the start, so `rate()` and
# `increase()` see the first event instead of a series appearing out of nowhere.
for _status in TERMINAL:
    TICKETS_ENDED.labels(_status)
for _kind in get_args(RateLimitKind):
    GITHUB_RATE_LIMITED.labels(_kind)
for _adapter in get_args(Adapter):
    SESSIONS_RUNNING.labels(_adapter)
for _decision in ("allowed", "refused"):
    SESSION_EGRESS.labels(_decision)


def ticket_advanced(event: str, before: Status | None, after: Status) -> None:
    """A ticket took `event` and went from status `before` (None: new) to `after`."""
    TICKET_EVENTS.labels(event, "applied").inc()
    if after in TERMINAL and before not in TERMINAL:
        TICKETS_ENDED.labels(after).inc()


def session_ended(
    adapter: Adapter, result: SessionEnd, seconds: float, egress: tuple[int, int] = (0, 0)
) -> None:
    """An agent session ended with a result after `seconds` of wall time, having had
    `egress` (allowed, refused) connections through its proxy."""
    SESSIONS.labels(adapter, result).inc()
    SESSION_SECONDS.labels(adapter).observe(seconds)
    SESSION_EGRESS.labels("allowed").inc(egress[0])
    SESSION_EGRESS.labels("refused").inc(egress[1])


def github_response(method: str, status: int | None, rate_limit: RateLimitKind | None) -> None:
    """One request sent to GitHub: its response's status (None: no response came) and
    the rate limit the response reported, if any."""
    verb = method if method in HTTP_METHODS else "OTHER"
    GITHUB_REQUESTS.labels(verb, "error" if status is None else f"{status // 100}xx").inc()
    if rate_limit is not None:
        GITHUB_RATE_LIMITED.labels(rate_limit).inc()


def render_metrics() -> tuple[bytes, str]:
    """The exposition text of every metric, and its content type."""
    return generate_latest(), CONTENT_TYPE_LATEST
