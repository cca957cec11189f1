"""A session's result as its model gateway saw it: the gateway's meter is the usage (a
CLI's count that differs is logged), and a cap that refused a request makes the
outcome `budget` whatever the agent reported."""

from __future__ import annotations

from ballet.core.report import Report, Usage
from ballet.core.spend import Cap, Spend
from ballet.sessions import SessionResult
from ballet.sessions.gateway import GatewaySession, ModelGateway, SessionTerms
from ballet.sessions.gateway.grants import SessionGrants
from ballet.sessions.model_access import ModelAccess, with_spend
from structlog.testing import capture_logs

CLI_USAGE = Usage(input_tokens=10, output_tokens=1, cost_usd=0.0)


class NoMeter:
    def meter(self, *args: object) -> None:
        return None


def result_of(outcome: str = "done") -> SessionResult:
    report = Report(outcome=outcome, summary="did it", usage=CLI_USAGE)
    return SessionResult(
        report=report, head_sha=None, usage=CLI_USAGE, duration_seconds=1.0, handoff=None,
        output_tail="",
    )  # fmt: skip


def access_with(spend: Spend, cap: Cap | None = None) -> ModelAccess:
    served = GatewaySession(
        ModelGateway(NoMeter()), SessionTerms(session="s", repo="o/r"), SessionGrants(())
    )
    served.spend, served.cap_reached = spend, cap
    return ModelAccess(gateway=served)


def test_the_gateways_meter_is_the_usage_and_a_differing_cli_count_is_logged() -> None:
    spend = Spend(requests=2, input_tokens=900, cache_read_tokens=100, output_tokens=50,
                  cost_usd=0.42)  # fmt: skip
    with capture_logs() as logs:
        result = with_spend(result_of(), access_with(spend), "s")
    assert result.usage == Usage(input_tokens=1000, output_tokens=50, cost_usd=0.42)
    assert result.report.usage == result.usage
    assert result.spend == spend and result.report.outcome == "done"
    said = [entry for entry in logs if "the gateway's counts" in entry["event"]]
    assert said and said[0]["cli"]["input_tokens"] == 10


def test_a_cap_that_refused_makes_the_outcome_budget() -> None:
    cap = Cap(scope="ticket", limit_usd=5, spent_usd=5.12)
    result = with_spend(result_of("done"), access_with(Spend(requests=1, cost_usd=5.12), cap), "s")
    assert result.report.outcome == "budget"
    assert result.cap_reached == cap
    assert "this ticket's cost cap ($5.00) is reached: $5.12 spent" in result.report.summary


def test_without_a_gateway_the_result_is_the_clis() -> None:
    result = result_of()
    assert with_spend(result, ModelAccess(), "s") == result
