"""The session's environment: an allowlist, never the worker's environment.

A session gets PATH, the locale (LANG, LANGUAGE, LC_*), TERM and TZ from the
worker, the variables its runtime declares (`env:` in `.ballet.yml`), the
fixed variables its adapter's CLI needs, Ballet's own BALLET_* contract
variables and HOME (a fresh empty directory). Nothing else: no App key, no
webhook secret, no Redis URL, no GitHub token. A runtime may not declare a
variable of Ballet's own configuration, so `.ballet.yml` cannot ask for them.

Nor is a declared variable ever silently replaced by one Ballet sets
(core/runtime_env.py): one the adapter merges arrives merged, one it cannot merge
is refused — by `ballet validate` and when a ticket starts, and here again for a
runtime that comes from the worker's settings rather than `.ballet.yml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ballet.core.config import Runtime
from ballet.core.runtime_env import declared_refusal, never_passed, owned_variables
from ballet.sessions.runtimes.base import RuntimeConfigError

INHERITED = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ")
INHERITED_PREFIXES = ("LC_",)


def session_environment(
    parent_env: Mapping[str, str],
    *,
    runtime: Runtime,
    adapter_env: Mapping[str, str],
    ballet_env: Mapping[str, str],
    home: Path,
) -> dict[str, str]:
    """`adapter_env` is what the runtime's adapter sets, a declared variable it merges
    already merged into it."""
    refused = [name for name in (*runtime.env, *runtime.provider_keys) if forbidden(name)]
    if refused:
        raise RuntimeConfigError(
            f"the runtime's `env:` or `keys:` names {', '.join(refused)}, which Ballet never "
            "passes to a session nor a provider (its own settings and GitHub/Redis "
            "credentials); remove them from .ballet.yml"
        )
    base_url = runtime.sets_endpoint
    refusals = [
        refusal
        for name in runtime.env
        if (refusal := declared_refusal(runtime.adapter, name, base_url=base_url))
    ]
    if refusals:
        raise RuntimeConfigError("; and ".join(refusals))
    declared = {name: parent_env[name] for name in runtime.env if name in parent_env}
    env = {
        name: value
        for name, value in parent_env.items()
        if name in INHERITED or name.startswith(INHERITED_PREFIXES)
    }
    env.update(declared)
    env.update(adapter_env)
    env.update(ballet_env)
    env["HOME"] = str(home)
    # The table's promise, kept even by an adapter that sets a variable it does not list.
    owned = owned_variables(runtime.adapter)
    replaced = [
        name
        for name, value in declared.items()
        if env[name] != value and (name not in owned or owned[name].declared != "merged")
    ]
    if replaced:
        raise RuntimeConfigError(
            f"the {runtime.adapter} adapter sets {', '.join(replaced)} itself and would "
            "replace the value `env:` declares; remove them from `env:` in .ballet.yml"
        )
    return env


def forbidden(name: str) -> bool:
    return never_passed(name) is not None
