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

from ballet.core.check_runs import CANCELLED, FAILURE, SUCCESS
from ballet.core.config import Adapter
from ballet.core.record import TERMINAL, Record, StageRun, Status, WaitKind
from ballet.core.spend import Spend

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

# -- flow: stages, iterations, waits, questions, usage --------------------------------

# A stage id is the repository's choice: only the built-in template's ids are
# labels of their own; a sign-off session is `signoff`, any other stage `other`.
BUILTIN_STAGES = frozenset({"implement", "review", "verify", "approval", "integrate"})
# Outcomes too are the agents' words: the known vocabulary, anything else `other`.
KNOWN_OUTCOMES = SUCCESS | FAILURE | CANCELLED | {"question", "waived", "skipped"}
STAGES_FINISHED = Counter(
    "ballet_stages_finished_total",
    "Stage runs that ended, by stage (a built-in stage id, signoff, or other) and outcome"
    " (the report's outcome when it is a known one, else other).",
    ["stage", "outcome"],
)
ITERATION_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0)
FLOW_ITERATIONS = Histogram(
    "ballet_flow_iterations",
    "Iterations an ended ticket took (1: no stage sent it back), by end status.",
    ["status"],
    buckets=ITERATION_BUCKETS,
)
# From the labelled issue to the end: minutes for a small fix, days for a
# ticket that waits on people.
LEAD_TIME_BUCKETS = (
    *(60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0),
    *(86400.0, 172800.0, 604800.0, 1209600.0),
)
FLOW_LEAD_TIME = Histogram(
    "ballet_flow_lead_time_seconds",
    "Time from a ticket's start to its end, by end status (done, failed, cancelled).",
    ["status"],
    buckets=LEAD_TIME_BUCKETS,
)
FLOW_WAITS = Counter(
    "ballet_flow_waits_total",
    "Waits a ticket entered, by reason (question, approval, checks, review, merge, merge_result).",
    ["reason"],
)
QUESTIONS = Counter(
    "ballet_questions_total",
    "Questions raised to a person (a blocking question in a report, the iteration limit,"
    " a used-up budget, a stuck stage, an outcome with no target).",
)
UsageDirection = Literal["input", "output"]
USAGE_TOKENS = Counter(
    "ballet_usage_tokens_total",
    "Model tokens the agent sessions used, by direction (input, output), as their"
    " runtimes metered them.",
    ["direction"],
)
USAGE_COST = Counter(
    "ballet_usage_cost_usd_total",
    "Cost in US dollars of the agent sessions, as their runtimes metered it.",
)

# -- the model gateway: what providers' answers said (issue 32) ---------------------------

# Providers are the gateway's closed set; model names come from the providers'
# answers: the first MAX_MODEL_LABELS a process sees are labels of their own,
# any later one is `other` (an answer naming no model is `unknown`).
MAX_MODEL_LABELS = 40
_model_labels: set[str] = set()
ModelTokenKind = Literal["input", "cache_read", "cache_write", "output"]
MODEL_TOKENS = Counter(
    "ballet_model_tokens_total",
    "Model tokens the gateway metered from providers' answers, by provider, model and kind"
    " (input: fresh input; cache_read; cache_write; output, reasoning included).",
    ["provider", "model", "kind"],
)
MODEL_COST = Counter(
    "ballet_model_cost_usd_total",
    "Cost in US dollars of the answers the gateway metered, by provider and model, from the"
    " price table (an unpriced model's answers add nothing here: see priced=false requests).",
    ["provider", "model"],
)
MODEL_REQUESTS = Counter(
    "ballet_model_requests_total",
    "Provider answers the gateway metered, by provider, model and whether the model's price"
    " is known (priced: true, false).",
    ["provider", "model", "priced"],
)


def model_label(model: str | None) -> str:
    """`model` while fewer than MAX_MODEL_LABELS models were seen, else `other`."""
    return "unknown" if model is None else _bounded_label(model, _model_labels, MAX_MODEL_LABELS)


def _bounded_label(value: str, seen: set[str], most: int) -> str:
    """`value` while fewer than `most` values were `seen`, else `other`."""
    if value in seen:
        return value
    if len(seen) < most:
        seen.add(value)
        return value
    return "other"


def model_spend_observed(provider: str, model: str | None, spend: Spend) -> None:
    """The gateway metered `spend` (one answer's, or several) of `provider`'s `model`."""
    label = model_label(model)
    tokens: dict[ModelTokenKind, int] = {
        "input": spend.input_tokens,
        "cache_read": spend.cache_read_tokens,
        "cache_write": spend.cache_write_tokens,
        "output": spend.output_tokens,
    }
    for kind, count in tokens.items():
        MODEL_TOKENS.labels(provider, label, kind).inc(count)
    MODEL_COST.labels(provider, label).inc(spend.cost_usd)
    priced = spend.requests - spend.unpriced_requests
    MODEL_REQUESTS.labels(provider, label, "true").inc(max(priced, 0))
    MODEL_REQUESTS.labels(provider, label, "false").inc(spend.unpriced_requests)


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
    "secret",  # the commits carried a declared secret's value: nothing was pushed
    "memory",  # a limit the kernel enforced stopped it (docs/security.md, Resource limits)
    "processes",
    "disk",
    "cpu",
    "error",  # Ballet itself raised while running it (a bug, a lost disk): see the log
]
SESSIONS = Counter(
    "ballet_sessions_total",
    "Agent sessions that ended, by runtime adapter and result: reported, one of the"
    " failure reasons (timeout, exit_code, missing_report, invalid_report,"
    " invalid_handoff, workspace, runtime, push, secret; memory, processes, disk, cpu: a"
    " resource limit stopped it) or error (Ballet raised).",
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

# -- agent pools ------------------------------------------------------------------------

# Pool names are the operator's (and, for pools BALLET_POOLS leaves open, a
# repository's) choice: the first MAX_POOL_LABELS a process sees are labels of
# their own, any later one is `other`.
MAX_POOL_LABELS = 20
_pool_labels: set[str] = {"default"}
POOL_QUEUED = Gauge(
    "ballet_pool_sessions_queued",
    "Sessions queued on a pool and not started (any worker sees every pool: take the max).",
    ["pool"],
)
POOL_OLDEST_WAITING = Gauge(
    "ballet_pool_oldest_waiting_seconds",
    "How long the pool's oldest queued session has waited for a worker (take the max).",
    ["pool"],
)
POOL_WORKERS = Gauge(
    "ballet_pool_workers",
    "Live workers of a pool, by their heartbeats (take the max across workers).",
    ["pool"],
)
POOL_RUNNING = Gauge(
    "ballet_pool_sessions_running",
    "Sessions of a pool running in this worker now (sum across workers).",
    ["pool"],
)


def pool_label(pool: str) -> str:
    """`pool` while fewer than MAX_POOL_LABELS pools were seen, else `other`."""
    return _bounded_label(pool, _pool_labels, MAX_POOL_LABELS)


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
for _reason in get_args(WaitKind):
    FLOW_WAITS.labels(_reason)
for _direction in get_args(UsageDirection):
    USAGE_TOKENS.labels(_direction)


def ticket_advanced(event: str, before: Status | None, after: Status) -> None:
    """A ticket took `event` and went from status `before` (None: new) to `after`."""
    TICKET_EVENTS.labels(event, "applied").inc()
    if after in TERMINAL and before not in TERMINAL:
        TICKETS_ENDED.labels(after).inc()


def stage_label(run: StageRun) -> str:
    """The bounded `stage` label of a run."""
    if run.role is not None:
        return "signoff"
    return run.stage if run.stage in BUILTIN_STAGES else "other"


def outcome_label(outcome: str | None) -> str:
    return outcome if outcome in KNOWN_OUTCOMES else "other"


def finished_runs(before: Record | None, after: Record) -> list[StageRun]:
    """The runs of `after` that ended in this transition (history only grows)."""
    earlier = before.history if before is not None else ()
    return [
        run
        for i, run in enumerate(after.history)
        if run.end is not None and (i >= len(earlier) or earlier[i].end is None)
    ]


def flow_observed(before: Record | None, after: Record) -> None:
    """What a transition from `before` (None: a new ticket) to `after` adds to the flow
    figures: stage runs that ended, their usage, a new wait, new questions and,
    when the ticket ended, its iterations and lead time."""
    for run in finished_runs(before, after):
        STAGES_FINISHED.labels(stage_label(run), outcome_label(run.outcome)).inc()
        USAGE_TOKENS.labels("input").inc(run.usage.input_tokens)
        USAGE_TOKENS.labels("output").inc(run.usage.output_tokens)
        USAGE_COST.inc(run.usage.cost_usd)
    wait = after.waiting
    was = before.waiting if before is not None else None
    if wait is not None and (was is None or (was.kind, was.since) != (wait.kind, wait.since)):
        FLOW_WAITS.labels(wait.kind).inc()
    asked = len(after.questions) - (len(before.questions) if before is not None else 0)
    if asked > 0:
        QUESTIONS.inc(asked)
    if after.status in TERMINAL and (before is None or before.status not in TERMINAL):
        FLOW_ITERATIONS.labels(after.status).observe(after.iteration)
        lead = (after.updated_at - after.created_at).total_seconds()
        FLOW_LEAD_TIME.labels(after.status).observe(max(lead, 0.0))


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
