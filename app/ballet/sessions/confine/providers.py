"""The hosts each runtime's CLI must reach: its model provider's API, nothing else.

A confined session reaches these through the egress proxy without any line in
`.ballet.yml`; a runtime adds more with `egress:`, the operator with
BALLET_SESSION_EGRESS_ALLOW (e.g. a model server on this machine). Telemetry,
update checks and catalogue downloads are deliberately absent: the adapters
turn them off, and a CLI that still tries is refused and counted.
"""

from __future__ import annotations

from collections.abc import Mapping

from ballet.core.config import Adapter

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
