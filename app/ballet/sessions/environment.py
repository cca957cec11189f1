"""The session's environment: an allowlist, never the worker's environment.

A session gets PATH, the locale (LANG, LANGUAGE, LC_*), TERM and TZ from the
worker, the variables its runtime declares (`env:` in `.ballet.yml`), the
fixed variables its adapter's CLI needs, Ballet's own BALLET_* contract
variables and HOME (a fresh empty directory). Nothing else: no App key, no
webhook secret, no Redis URL, no GitHub token. A runtime may not declare a
variable of Ballet's own configuration, so `.ballet.yml` cannot ask for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ballet.sessions.runtimes.base import RuntimeConfigError

INHERITED = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ")
INHERITED_PREFIXES = ("LC_",)
# Ballet's settings are BALLET_*; the rest are the credentials a worker may hold.
FORBIDDEN_PREFIXES = ("BALLET_", "GITHUB_", "GH_", "REDIS", "VALKEY", "GIT_")
FORBIDDEN_NAMES = frozenset({"HOME", "PATH", "GITHUB_TOKEN", "GH_TOKEN", "REDIS_URL"})


def session_environment(
    parent_env: Mapping[str, str],
    *,
    declared: Sequence[str],
    adapter_env: Mapping[str, str],
    ballet_env: Mapping[str, str],
    home: Path,
) -> dict[str, str]:
    refused = [name for name in declared if forbidden(name)]
    if refused:
        raise RuntimeConfigError(
            f"the runtime's `env:` names {', '.join(refused)}, which Ballet never passes "
            "to a session (its own settings and GitHub/Redis credentials); remove them "
            "from `env:` in .ballet.yml"
        )
    env = {
        name: value
        for name, value in parent_env.items()
        if name in INHERITED or name.startswith(INHERITED_PREFIXES)
    }
    env.update({name: parent_env[name] for name in declared if name in parent_env})
    env.update(adapter_env)
    env.update(ballet_env)
    env["HOME"] = str(home)
    return env


def forbidden(name: str) -> bool:
    return name in FORBIDDEN_NAMES or name.startswith(FORBIDDEN_PREFIXES)
