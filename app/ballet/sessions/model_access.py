"""How a session reaches its model provider: through the worker's model gateway.

For a runtime with provider keys (`Runtime.provider_keys`), the session's
gateway is opened before its process starts: a unix socket of its own (bound into
the sandbox, where the relay serves it on `127.0.0.1:GATEWAY_PORT`) or, unconfined,
a loopback port. The session's environment then holds each key variable's token
in place of the key, BALLET_GATEWAY_URL, and each CLI is pointed at
`<gateway>/<provider>` by its adapter (`Invocation.gateway`). When the session
ends, what the gateway metered is its usage (the CLI's own count, when it differs,
is logged), and a cap that refused a request makes its outcome `budget`.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from ballet.core.provider_keys import Provider
from ballet.core.report import Usage
from ballet.core.spend import Spend
from ballet.sessions.confine import Isolation
from ballet.sessions.confine.session import GATEWAY_PORT
from ballet.sessions.gateway import GatewaySession, ModelGateway, ProviderMetering, SessionTerms
from ballet.sessions.spec import RunnerSpec, SessionResult

log = structlog.get_logger("ballet.sessions.gateway")

GATEWAY_URL = "BALLET_GATEWAY_URL"


@dataclass(frozen=True)
class ModelAccess:
    """The session's gateway, what its environment holds instead of keys, and where."""

    gateway: GatewaySession | None = None
    socket: Path | None = None  # bound into the sandbox
    urls: Mapping[str, str] = field(default_factory=dict)  # each provider's, for the CLI
    env: Mapping[str, str] = field(default_factory=dict)  # tokens and BALLET_GATEWAY_URL

    @property
    def tokens(self) -> dict[str, str]:
        return self.gateway.tokens if self.gateway else {}


def held_keys(spec: RunnerSpec, parent_env: Mapping[str, str]) -> dict[str, tuple[Provider, str]]:
    """The key variables the worker has for this runtime, with their provider and value."""
    keys = spec.runtime.provider_keys
    return {name: (keys[name], parent_env[name]) for name in keys if parent_env.get(name)}


@contextlib.asynccontextmanager
async def model_access(
    spec: RunnerSpec,
    session: str,
    parent_env: Mapping[str, str],
    isolation: Isolation,
    gateway: ModelGateway | None,
) -> AsyncIterator[ModelAccess]:
    keys = held_keys(spec, parent_env)
    if not keys:
        yield ModelAccess()
        return
    own = gateway is None
    gateway = gateway or ModelGateway(ProviderMetering())  # no ledger: a caller's own
    terms = SessionTerms(
        session=session,
        repo=spec.ticket.repo,
        installation_id=spec.installation_id,
        budget=spec.budget,
        base_url=spec.runtime.base_url,
    )
    directory = Path(tempfile.mkdtemp(prefix="ballet-gw-"))  # short: sun_path is 108 bytes
    socket = directory / "gateway.sock" if isolation.mode == "bwrap" else None
    try:
        async with gateway.session(terms, keys, socket) as served:
            port = GATEWAY_PORT if socket is not None else served.port
            root = f"http://127.0.0.1:{port}"
            env = {**served.tokens, GATEWAY_URL: root}
            urls: dict[str, str] = {p: f"{root}/{p}" for p in served.grants.providers}
            yield ModelAccess(served, socket, urls, env)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if own:
            await gateway.aclose()


def with_spend(result: SessionResult, access: ModelAccess, session: str) -> SessionResult:
    """The result as the gateway saw it: its meter as the usage, and `budget` when a cap
    refused a request (whatever the agent reported)."""
    served = access.gateway
    if served is None:
        return result
    spend, cap = served.spend, served.cap_reached
    update: dict[str, object] = {"spend": spend, "cap_reached": cap}
    if spend.requests:
        metered = metered_usage(spend)
        if (result.usage.input_tokens, result.usage.output_tokens) != (
            metered.input_tokens,
            metered.output_tokens,
        ):
            log.info(
                "the CLI's usage is not the gateway's; the gateway's counts",
                session=session, cli=result.usage.model_dump(), gateway=metered.model_dump(),
            )  # fmt: skip
        update["usage"] = metered
    report = result.report.model_copy(update={"usage": update.get("usage", result.report.usage)})
    if cap is not None:
        report = report.model_copy(
            update={"outcome": "budget", "summary": f"Ballet stopped the session: {cap.says()}"}
        )
    return result.model_copy(update={**update, "report": report})


def metered_usage(spend: Spend) -> Usage:
    return Usage(
        input_tokens=spend.all_input_tokens,
        output_tokens=spend.output_tokens,
        cost_usd=spend.cost_usd,
    )
