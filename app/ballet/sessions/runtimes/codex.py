"""`codex`: `codex exec --json`.

Credentials: `codex exec` reads CODEX_API_KEY (with a fresh HOME it ignores
OPENAI_API_KEY), so a declared CODEX_API_KEY, else a declared OPENAI_API_KEY,
is passed as CODEX_API_KEY (Ballet's gateway token, when the runtime holds the
key). Endpoint: Codex ignores OPENAI_BASE_URL in the environment; Ballet's model
gateway (or `base_url`) becomes a model provider of its own in its config
(`-c model_providers.ballet=…`, Responses API over HTTPS, no WebSocket, which
an HTTP egress proxy or a plain gateway may not carry).

Usage is the sum of `turn.completed` events' `usage` (`cached_input_tokens`
is part of `input_tokens`); Codex reports no cost, so cost stays 0.
The sandbox is `danger-full-access`: the agent must commit (Codex's
workspace-write sandbox keeps `.git` read-only) and write its report outside
the clone; Ballet's session confinement is the boundary instead.
"""

from __future__ import annotations

import json
from typing import Any

from ballet.core.report import Usage
from ballet.sessions.runtimes.base import (
    EventMeter,
    Invocation,
    RuntimeAdapter,
    UsageMeter,
    mapping,
    tokens,
)

KEY_NAMES = ("CODEX_API_KEY", "OPENAI_API_KEY")  # first declared wins
PROVIDER = "ballet"
QUIET_FEATURES = (
    "plugins",
    "remote_plugin",
    "apps",
    "plugin_sharing",
    "skill_mcp_dependency_install",
)


def toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string of printable text is a TOML basic string


class CodexAdapter(RuntimeAdapter):
    name = "codex"
    executable = "codex"

    def arguments(self, invocation: Invocation) -> list[str]:
        argv = [
            "exec",
            "--json",
            "-C",
            str(invocation.workdir),
            "--sandbox",
            "danger-full-access",
            "--skip-git-repo-check",
            "--ephemeral",
            "-c",
            'approval_policy="never"',
            # No traffic but the model API: no usage analytics, no plugin, app or
            # skill-dependency downloads (GitHub, chatgpt.com).
            "-c",
            "analytics.enabled=false",
            *(arg for feature in QUIET_FEATURES for arg in ("--disable", feature)),
        ]
        endpoint = invocation.endpoint("openai")
        if endpoint:
            provider = (
                f"{{name={toml_string('Ballet base_url')}, "
                f"base_url={toml_string(endpoint)}, "
                'env_key="CODEX_API_KEY", wire_api="responses", supports_websockets=false}'
            )
            argv += [
                "-c",
                f"model_providers.{PROVIDER}={provider}",
                "-c",
                f'model_provider="{PROVIDER}"',
            ]
        if invocation.model:
            argv += ["-m", invocation.model]
        if invocation.effort:
            argv += ["-c", f"model_reasoning_effort={toml_string(invocation.effort)}"]
        return [*argv, "--", invocation.prompt]

    def environment(self, invocation: Invocation) -> dict[str, str]:
        env = super().environment(invocation)
        key = next((invocation.declared[n] for n in KEY_NAMES if n in invocation.declared), None)
        if key is not None:
            env["CODEX_API_KEY"] = key
        return env

    def meter(self, invocation: Invocation) -> UsageMeter:
        return CodexMeter()


class CodexMeter(EventMeter):
    event_type = "turn.completed"

    def read(self, event: dict[str, Any], before: Usage) -> Usage:
        usage = mapping(event.get("usage"))
        return Usage(
            input_tokens=before.input_tokens + tokens(usage.get("input_tokens")),
            output_tokens=before.output_tokens + tokens(usage.get("output_tokens")),
        )
