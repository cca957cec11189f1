"""`command`: any argv from the runtime config, run in the clone.

The program reads its instructions from BALLET_PROMPT/BALLET_CONTEXT and writes
BALLET_REPORT itself. Model and effort are not passed: it chooses for itself.
"""

from __future__ import annotations

from ballet.core.config import Runtime
from ballet.sessions.runtimes.base import Invocation, RuntimeAdapter, RuntimeConfigError


class CommandAdapter(RuntimeAdapter):
    name = "command"
    executable = ""
    writes_report_itself = True

    def program(self, runtime: Runtime) -> list[str]:
        if not runtime.command:
            raise RuntimeConfigError(
                "a runtime with `adapter: command` needs `command:`, the argv to run, "
                "e.g. `command: [python3, .ballet/agent.py]`"
            )
        return list(runtime.command)

    def arguments(self, invocation: Invocation) -> list[str]:
        return []
