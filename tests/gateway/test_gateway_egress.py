"""A session whose keys the model gateway holds reaches no provider host itself; one
whose worker has none of its keys (a subscription's token instead) still does."""

from __future__ import annotations

from ballet.core.config import Runtime
from ballet.sessions.confine.providers import runtime_destinations


def test_the_provider_hosts_are_let_through_only_without_the_gateway() -> None:
    runtime = Runtime(
        adapter="claude-code",
        env=("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"),
        egress=("pypi.org",),
        base_url="https://llm-proxy.example.com/anthropic",
    )
    through = [str(rule) for rule in runtime_destinations(runtime, gateway=True)]
    assert through == ["pypi.org:443"]
    direct = [str(rule) for rule in runtime_destinations(runtime, gateway=False)]
    assert direct == ["api.anthropic.com:443", "pypi.org:443", "llm-proxy.example.com:443"]
