"""The hosts each runtime's CLI must reach: its model provider's API, nothing else.

A confined session reaches these through the egress proxy without any line in
`.ballet.yml`; a runtime adds more with `egress:`, the operator with
BALLET_SESSION_EGRESS_ALLOW (e.g. a model server on this machine). Telemetry,
update checks and catalogue downloads are deliberately absent: the adapters
turn them off, and a CLI that still tries is refused and counted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from urllib.parse import urlsplit

from ballet.core.config import Adapter, Runtime
from ballet.core.egress import EgressRule, EgressRuleError, parse_rule

ANTHROPIC = "api.anthropic.com"
OPENAI = "api.openai.com"
GEMINI = "generativelanguage.googleapis.com"

PROVIDER_HOSTS: Mapping[Adapter, tuple[str, ...]] = {
    "command": (),  # any argv: whatever it needs, the repository lists
    "claude-code": (ANTHROPIC,),
    "codex": (OPENAI,),
    "gemini": (GEMINI,),
    # opencode and aider speak to whichever provider the model names.
    "opencode": (ANTHROPIC, OPENAI, GEMINI),
    "aider": (ANTHROPIC, OPENAI, GEMINI),
}


def runtime_destinations(runtime: Runtime, *, gateway: bool = False) -> tuple[EgressRule, ...]:
    """Where a session of `runtime` may go: its provider, its `egress:`, and its
    `base_url`'s host when that is public (a local one is the operator's to allow,
    with BALLET_SESSION_EGRESS_ALLOW; the proxy then says so if it is not).
    A session whose provider keys the model gateway holds (`gateway`) reaches its
    providers only through it (and `base_url` is the gateway's upstream): only its
    `egress:` then. One whose worker has none of its keys (a subscription's token
    instead, say) reaches its provider itself, as before."""
    if gateway:
        return tuple(parse_rule(host) for host in runtime.egress)
    rules = [parse_rule(host) for host in (*PROVIDER_HOSTS[runtime.adapter], *runtime.egress)]
    url = urlsplit(runtime.base_url or "")
    if url.hostname:
        host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
        with contextlib.suppress(EgressRuleError):
            rules.append(parse_rule(f"{host}:{url.port or (443 if url.scheme == 'https' else 80)}"))
    return tuple(rules)
