"""Builders for the core's tests: pipelines and records made directly.

Pipelines are built as `ResolvedPipeline` values (not through the resolver) so
these tests pin the machine's behaviour alone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ballet.core.config import (
    Budget,
    Policy,
    ResolvedPipeline,
    ResolvedRole,
    ResolvedStage,
    Runtime,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CLAUDE = Runtime(adapter="claude-code", model="sonnet", env=("ANTHROPIC_API_KEY",))
CODEX = Runtime(adapter="codex")


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def agent(stage_id: str, **kw: Any) -> ResolvedStage:
    runtime = kw.pop("runtime", "claude")
    return ResolvedStage(
        id=stage_id,
        kind="agent",
        name=kw.pop("name", stage_id.title()),
        runtime=runtime,
        runtime_config=CODEX if runtime == "codex" else CLAUDE,
        **kw,
    )


def human(stage_id: str, **kw: Any) -> ResolvedStage:
    return ResolvedStage(id=stage_id, kind="human", name=stage_id.title(), **kw)


def platform(stage_id: str, **kw: Any) -> ResolvedStage:
    return ResolvedStage(id=stage_id, kind="platform", name=stage_id.title(), **kw)


def default_stages() -> tuple[ResolvedStage, ...]:
    return (
        agent("implement", skills=("implementer",), next={"done": "review"}),
        agent(
            "review", runtime="codex", next={"approve": "verify", "changes_requested": "implement"}
        ),
        agent("verify", next={"pass": "integrate", "fail": "implement"}),
        human("approval", optional=True, next={"approve": "integrate", "reject": "implement"}),
        platform("integrate", action="merge", next={"merged": "$done", "returned": "implement"}),
    )


def make_pipeline(stages: tuple[ResolvedStage, ...] | None = None, **kw: Any) -> ResolvedPipeline:
    roles = {
        "security": ResolvedRole(
            name="security",
            runtime="codex",
            runtime_config=CODEX,
            skills=("reviewer",),
            instructions="Review for security.",
        ),
        "docs": ResolvedRole(name="docs", runtime="claude", runtime_config=CLAUDE),
    }
    fields: dict[str, Any] = {
        "name": "default",
        "version": 3,
        "hash": "sha256:abc",
        "ticket_type": "default",
        "branch": "ballet/{ticket}-{slug}",
        "base": None,
        "iteration_limit": 3,
        "budget": Budget(),
        "signoffs": (),
        "roles": roles,
        "approvers": None,
        "policy": Policy(),
        "stages": stages if stages is not None else default_stages(),
    }
    fields.update(kw)
    return ResolvedPipeline(**fields)
