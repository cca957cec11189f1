"""Fault injection: GitHub as it is on a bad day, on purpose and repeatably.

`POST /_sandbox/faults {"rate": 0.2, "kinds": ["502", "secondary_rate_limit",
"timeout"], "seed": 1}` makes that share of the App's REST requests fail, each
with a kind drawn from `kinds`; `DELETE /_sandbox/faults` ends it and returns
how many of each were injected. Only the App's API requests fail: people acting
through the REST API, git over HTTP and the admin API are left alone, so a
test's own set-up and assertions never meet a fault.

- `502`: GitHub's `{"message": "Server Error"}`;
- `secondary_rate_limit`: a 403 with GitHub's secondary-limit message and a
  `retry-after` (`retry_after_seconds`, default 60 as GitHub often asks);
- `timeout`: the request is held `timeout_seconds` (default 10, GitHub's own
  limit) and answered 504, as GitHub answers a request it could not finish.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Receive, Scope, Send

FaultKind = Literal["502", "secondary_rate_limit", "timeout"]
SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID."
)
TIMED_OUT = (
    "We couldn't respond to your request in time. Sorry about that. Please try resubmitting "
    "your request and contact us if the problem persists."
)


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rate: float = Field(ge=0, le=1)
    kinds: list[FaultKind] = Field(min_length=1)
    seed: int | None = None
    retry_after_seconds: int = Field(default=60, ge=0)
    timeout_seconds: float = Field(default=10.0, ge=0, le=120)


@dataclass
class Faults:
    spec: FaultSpec
    rng: random.Random
    injected: Counter[str] = field(default_factory=Counter)
    seen: int = 0  # App requests that could have failed

    @classmethod
    def start(cls, spec: FaultSpec) -> Faults:
        return cls(spec, random.Random(spec.seed))

    def draw(self) -> FaultKind | None:
        self.seen += 1
        if self.rng.random() >= self.spec.rate:
            return None
        kind = self.rng.choice(self.spec.kinds)
        self.injected[kind] += 1
        return kind

    def summary(self) -> dict[str, object]:
        return {
            **self.spec.model_dump(),
            "requests": self.seen,
            "injected": dict(self.injected),
        }


def _by_the_app(scope: Scope) -> bool:
    path: str = scope["path"]
    if path.startswith("/_sandbox/") or ".git/" in path or path.endswith(".git"):
        return False
    headers = dict(scope.get("headers") or [])
    auth = headers.get(b"authorization", b"").decode("latin-1")
    # Users act as `token sandbox-user:<login>`; the App with its JWT or a token.
    return bool(auth) and not auth.lower().startswith("token sandbox-user:")


class Faulted(Protocol):
    """What the injector needs of the sandbox (`state.Sandbox`), which imports this module."""

    faults: Faults | None
    requests: list[dict[str, Any]]


class FaultInjector:
    """ASGI middleware: fails the App's requests while a fault plan is on."""

    def __init__(self, app: ASGIApp, sandbox: Faulted) -> None:
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        faults = self.sandbox.faults
        if scope["type"] != "http" or faults is None or not _by_the_app(scope):
            await self.app(scope, receive, send)
            return
        kind = faults.draw()
        if kind is None:
            await self.app(scope, receive, send)
            return
        spec = faults.spec
        headers: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json")]
        if kind == "502":
            status, message = 502, "Server Error"
        elif kind == "secondary_rate_limit":
            status, message = 403, SECONDARY
            headers.append((b"retry-after", str(spec.retry_after_seconds).encode()))
        else:
            await asyncio.sleep(spec.timeout_seconds)
            status, message = 504, TIMED_OUT
        body = json.dumps(
            {"message": message, "documentation_url": "https://docs.github.com/rest"}
        ).encode()
        self.sandbox.requests.append(
            {"method": scope["method"], "path": scope["path"], "status": status, "fault": kind}
        )
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
