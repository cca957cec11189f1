"""A sign-off role's own `model` and `effort` reach its session's spec, as a stage's do."""

from __future__ import annotations

from ballet.core.config import ResolvedRole
from core_kit import CODEX, Ticket, make_pipeline


def gated(role: ResolvedRole) -> Ticket:
    t = Ticket(pipeline=make_pipeline(signoffs=("security",), roles={"security": role}))
    t.open_pr()
    t.finish("done")
    t.finish("approve")
    t.finish("pass")
    return t


def test_the_role_s_model_and_effort_are_its_session_s() -> None:
    role = ResolvedRole(
        name="security", runtime="codex", runtime_config=CODEX, model="gpt-big", effort="high"
    )
    spec = gated(role).session()
    assert (spec.kind, spec.role) == ("signoff", "security")
    assert (spec.model, spec.effort) == ("gpt-big", "high")


def test_a_role_without_them_runs_on_its_runtime_s_defaults() -> None:
    spec = gated(ResolvedRole(name="security", runtime="codex", runtime_config=CODEX)).session()
    assert (spec.kind, spec.model, spec.effort) == ("signoff", None, None)
