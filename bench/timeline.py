"""Where a transition's time goes: spans of the steps between two agent processes.

`install()` wraps, in place, the functions a transition passes through (the push,
the SessionFinished job, each effect, the session job, the workspace, each git
command, the sandbox) so that every call is noted as a span (name, start, end).
`breakdown()` then lists, for each transition of a ticket, the spans that began
between one agent's end and the next agent's start, as offsets from the end.

Only for benches: it patches module and class attributes of the running process.
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ballet.github import sealed_cache
from ballet.jobs import artifacts, session_results, stage_sessions
from ballet.sessions import cloning, incoming, mirror, prepared, push, runner, workspace
from ballet.tickets import interpret, lock, service, source, store


@dataclass(frozen=True)
class Span:
    name: str
    start: float
    end: float


SPANS: list[Span] = []


def _timed(name: str | Callable[..., str], fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.monotonic()
        try:
            return await fn(*args, **kwargs)
        finally:
            label = name(*args, **kwargs) if callable(name) else name
            SPANS.append(Span(label, start, time.monotonic()))

    return wrapper


def _timed_sync(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            SPANS.append(Span(name, start, time.monotonic()))

    return wrapper


def _timed_context(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """An async context manager whose entering is the span (e.g. starting the proxy)."""

    @contextlib.asynccontextmanager
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        start = time.monotonic()
        async with fn(*args, **kwargs) as value:
            SPANS.append(Span(name, start, time.monotonic()))
            yield value

    return wrapper


def _git_name(*args: str, **_: Any) -> str:
    return f"git {args[0]}" if args[0] != "-c" else f"git {args[2]}"


def _effect_name(_self: Any, effect: Any) -> str:
    return f"effect {effect.kind}"


def _delivery_name(_self: Any, delivery: Any) -> str:
    return f"delivery {delivery.event}.{delivery.envelope.action or ''}"


def _event_name(_self: Any, _key: str, event: Any, **_: Any) -> str:
    return f"apply {event.kind} (locked)"


def install() -> None:
    """Wrap the steps of a transition (idempotent per process: call once)."""
    for module in (workspace, push, cloning, mirror, incoming):
        module.run_git = _timed(_git_name, module.run_git)  # type: ignore[attr-defined]
    runner.push_ticket_branch = _timed("push", runner.push_ticket_branch)  # type: ignore[attr-defined]
    push.find_secret = _timed("push: secrets scan", push.find_secret)  # type: ignore[attr-defined]
    push.take_pushed = _timed("push: mirror takes it", push.take_pushed)  # type: ignore[attr-defined]
    runner._finished = _timed("session log finished", runner._finished)  # type: ignore[attr-defined]
    runner.confined = _timed_context("confine (proxy up)", runner.confined)  # type: ignore[attr-defined]
    for module, attr, label in (
        (stage_sessions, "deliver_result", "deliver result"),
        (session_results, "send_ticket_event", "enqueue event"),
        (stage_sessions, "_run", "session job"),
        (stage_sessions, "build_runner_spec", "runner spec"),
        (stage_sessions, "apply_now", "apply result now"),
        (stage_sessions, "_taken", "taken (pools)"),
    ):
        setattr(module, attr, _timed(label, getattr(module, attr)))
    for cls, attr, label in (
        (source.GitHubTicketSource, "git_token", "git token"),
        (source.GitHubTicketSource, "clone_url", "clone url"),
        (source.GitHubTicketSource, "issue", "issue (GitHub)"),
        (artifacts.Artifacts, "earlier_reports", "earlier reports"),
        (artifacts.Artifacts, "add", "artifacts add"),
        (service.TicketService, "handle", _event_name),
        (service.TicketService, "on_delivery", _delivery_name),
        (service.TicketService, "_apply", "apply (load to commit)"),
        (service.TicketService, "_drain", "drain"),
        (lock.TicketLock, "_wait_for_turn", "ticket lock wait"),
        (store.RecordStore, "load", "record load"),
        (store.RecordStore, "commit", "record commit"),
        (store.RecordStore, "outbox", "outbox read"),
        (store.RecordStore, "was_applied", "applied? (event id)"),
        (stage_sessions.ArqSessionLauncher, "launch", "launch"),
        (workspace.Workspaces, "refresh", "mirror refresh"),
        (workspace.Workspaces, "create", "workspace create"),
        (prepared.PreparedClones, "_make", "clone prepared ahead"),
        (workspace.Workspaces, "take_prepared", "take prepared (GitHub's refs)"),
        (sealed_cache._SealedHttpStorage, "get_entries", "http cache: look up"),
        (sealed_cache._SealedHttpStorage, "update_entry", "http cache: update"),
    ):
        setattr(cls, attr, _timed(label, getattr(cls, attr)))
    service.advance = _timed_sync("engine (core.advance)", service.advance)  # type: ignore[attr-defined]
    interpret.Interpreter.apply = _timed(_effect_name, interpret.Interpreter.apply)  # type: ignore[method-assign]


def breakdown(
    names: Sequence[str],
    runs_per_ticket: Sequence[Sequence[tuple[float, float]]],
    github: Callable[[float, float], float] = lambda start, end: 0.0,
) -> str:
    """Per transition: each step's median start after the agent's end, duration, and
    the part of it GitHub's double was not answering (`github(start, end)`: how much
    of that interval it was)."""
    lines: list[str] = []
    for index, name in enumerate(names):
        offsets: dict[str, list[float]] = defaultdict(list)
        durations: dict[str, list[float]] = defaultdict(list)
        own: dict[str, list[float]] = defaultdict(list)
        for runs in runs_per_ticket:
            if len(runs) <= index + 1:
                continue
            end, next_start = runs[index][1], runs[index + 1][0]
            for span in SPANS:
                if end - 0.001 <= span.start <= next_start:
                    offsets[span.name].append((span.start - end) * 1000)
                    durations[span.name].append((span.end - span.start) * 1000)
                    answered = github(span.start, span.end)
                    own[span.name].append((span.end - span.start - answered) * 1000)
        lines.append(
            f"\n{name}: step (median start after the agent's end, duration,"
            " of it not GitHub's, calls)"
        )
        order = sorted(offsets, key=lambda step: statistics.median(offsets[step]))
        for step in order:
            start, took = statistics.median(offsets[step]), statistics.median(durations[step])
            mine = statistics.median(own[step])
            calls = len(offsets[step]) / max(1, len(runs_per_ticket))
            lines.append(
                f"  {step:<34} +{start:>6.0f} ms  {took:>6.0f} ms  {mine:>6.0f} ms  x{calls:.1f}"
            )
    return "\n".join(lines)
