"""The environment variables Ballet sets in a session, and what becomes of each when a
runtime also declares it in `env:` (docs/runtimes.md, "Variables Ballet sets").

A declared variable is never silently replaced. Where the variable's format lets two
values combine, the adapter merges the declared value with Ballet's (opencode's JSON
configuration; aider's PYTHONPATH, a search path); where it does not, `.ballet.yml`
is refused (config_rules.py, at the `env:` entry) and so is a session asked for it
(sessions/environment.py), saying what to do instead.

This table is the one place that says which variables Ballet owns: the adapters take
their fixed values from it, the sessions' environment is checked against it, and a
test fails when an adapter (or the confinement) sets a variable it does not list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ballet.core.config import Adapter

Declared = Literal["refused", "merged", "kept"]


@dataclass(frozen=True)
class OwnedVariable:
    name: str
    value: str | None  # what Ballet sets when it never varies; None: made per session
    why: str  # what Ballet sets it for
    declared: Declared  # what becomes of the same variable declared in `env:`
    advice: str  # refused: what to do instead; merged or kept: how the two combine
    with_base_url: bool = False  # set only for a runtime with `base_url:` or provider keys
    by_confinement: bool = False  # set by sessions/confine, in a confined session

    def applies(self, *, base_url: bool) -> bool:
        return base_url or not self.with_base_url


REMOVE = "remove it from `env:`"
EGRESS = (
    "remove it from `env:`; name the hosts the session needs under the runtime's "
    "`egress:` (the operator allows others with BALLET_SESSION_EGRESS_ALLOW)"
)
PROXY_WHY = (
    "a confined session reaches the network only through Ballet's egress proxy, "
    "which Ballet points it at"
)
PROXY_NAMES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
NO_PROXY = ("NO_PROXY", "no_proxy")


def _proxy(name: str, why: str = PROXY_WHY) -> OwnedVariable:
    return OwnedVariable(name, None, why, "refused", EGRESS, by_confinement=True)


def _endpoint(name: str) -> OwnedVariable:
    return OwnedVariable(
        name,
        None,
        f"Ballet's model gateway (for a runtime with provider keys), or else the "
        f"runtime's `base_url:`, becomes {name}",
        "refused",
        f"give the endpoint once: remove {name} from `env:` and write it as `base_url:` "
        "(the gateway's upstream when the runtime holds provider keys)",
        with_base_url=True,
    )


def _quiet(name: str, value: str, why: str) -> OwnedVariable:
    return OwnedVariable(name, value, why, "refused", REMOVE)


# Every session, whatever its adapter (TMPDIR: runtimes/base.py; the proxy: confine/).
SESSION: tuple[OwnedVariable, ...] = (
    OwnedVariable(
        "TMPDIR",
        None,
        "each session has a TMPDIR of its own (`tmp` beside its report, removed with the "
        "session), so that a CLI's temporary files stay inside the session",
        "refused",
        "remove TMPDIR from `env:`; a program needing scratch space uses $TMPDIR as given",
    ),
    *(_proxy(name) for name in PROXY_NAMES),
    *(
        _proxy(
            name,
            "it is empty (or 127.0.0.1, the model gateway's), so that nothing "
            "else bypasses the egress proxy",
        )
        for name in NO_PROXY
    ),
    _proxy("NODE_USE_ENV_PROXY", "it is 1, so that Node.js CLIs use the egress proxy"),
)

ADAPTERS: Mapping[Adapter, tuple[OwnedVariable, ...]] = {
    "command": (),
    "claude-code": (
        _quiet(
            "IS_SANDBOX",
            "1",
            "Claude Code's bypass mode refuses to run as root without it (Ballet confines "
            "the session)",
        ),
        _quiet(
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "1",
            "no update checks, telemetry or error reports: a session's only traffic is the "
            "model API",
        ),
        _quiet("DISABLE_AUTOUPDATER", "1", "nothing is installed or updated during a session"),
        _endpoint("ANTHROPIC_BASE_URL"),
    ),
    "codex": (
        OwnedVariable(
            "CODEX_API_KEY",
            None,
            "`codex exec` reads its key only from CODEX_API_KEY",
            "kept",
            "a declared CODEX_API_KEY is passed as it is; without one, a declared "
            "OPENAI_API_KEY is passed as CODEX_API_KEY",
        ),
    ),
    "gemini": (
        _quiet(
            "GEMINI_CLI_TRUST_WORKSPACE",
            "true",
            "an untrusted folder is fatal to the headless CLI (exit 55)",
        ),
        _endpoint("GOOGLE_GEMINI_BASE_URL"),
    ),
    "opencode": (
        OwnedVariable(
            "OPENCODE_CONFIG_CONTENT",
            None,
            "opencode's configuration from Ballet: no auto-update, no sharing and, with "
            "`base_url:`, the model provider's endpoint",
            "merged",
            "a declared value must be a JSON object; its keys are kept and Ballet's are "
            "merged in (objects key by key): `autoupdate`, `share` and the provider's "
            "`options.baseURL` are Ballet's, its defaults for a custom provider yield to "
            "yours",
        ),
        _quiet("OPENCODE_DISABLE_AUTOUPDATE", "true", "nothing is updated during a session"),
        _quiet(
            "OPENCODE_DISABLE_DEFAULT_PLUGINS",
            "true",
            "its default plugins would be installed from npm at start",
        ),
        _quiet(
            "OPENCODE_DISABLE_LSP_DOWNLOAD",
            "true",
            "no language servers are downloaded during a session",
        ),
        _quiet(
            "OPENCODE_DISABLE_MODELS_FETCH",
            "true",
            "the models.dev catalogue is not fetched during a session",
        ),
        _quiet("OPENCODE_DISABLE_SHARE", "true", "no session is shared"),
    ),
    "aider": (
        OwnedVariable(
            "PYTHONPATH",
            None,
            "Ballet's usage meter, a `sitecustomize` module, goes first on it",
            "merged",
            "a declared PYTHONPATH follows Ballet's directory, and a `sitecustomize` "
            "module on it still runs, after Ballet's",
        ),
        OwnedVariable(
            "BALLET_AIDER_USAGE",
            None,
            "where Ballet's meter writes aider's model calls",
            "refused",
            "remove it from `env:` (BALLET_* variables are Ballet's own)",
        ),
        _quiet(
            "LITELLM_LOCAL_MODEL_COST_MAP",
            "True",
            "litellm reads its bundled model prices instead of fetching them from GitHub",
        ),
        *(_endpoint(name) for name in ("OPENAI_API_BASE", "ANTHROPIC_API_BASE", "GEMINI_API_BASE")),
    ),
}


def owned_variables(adapter: Adapter) -> dict[str, OwnedVariable]:
    """Every variable Ballet may set in a session of this adapter, by name."""
    return {v.name: v for v in (*SESSION, *ADAPTERS[adapter])}


def fixed_values(adapter: Adapter) -> dict[str, str]:
    """The adapter's variables whose value never varies, as its CLI is given them."""
    return {v.name: v.value for v in ADAPTERS[adapter] if v.value is not None}


def declared_refusal(adapter: Adapter, name: str, *, base_url: bool) -> str | None:
    """Why a runtime of this adapter may not declare `name` in `env:`, and what to do
    instead; None when it may (Ballet does not set it, or merges or keeps it)."""
    owned = owned_variables(adapter).get(name)
    if owned is None or owned.declared != "refused" or not owned.applies(base_url=base_url):
        return None
    if owned.by_confinement:
        scope = "every confined session"
    elif owned in SESSION:
        scope = "every session"
    elif owned.with_base_url:
        scope = f"`{adapter}` runtimes with provider keys or `base_url:`"
    else:
        scope = f"the `{adapter}` adapter"
    what = f"{name}={owned.value}" if owned.value is not None else name
    return f"Ballet sets `{what}` for {scope}: {owned.why}; {owned.advice}"


# Never passed to a session, nor held as a provider key: Ballet's own settings
# (BALLET_*; a session's BALLET_* contract variables are Ballet's to set) and the
# worker's credentials and home. `ballet validate` refuses them at the entry, and
# so does a session asked for one (sessions/environment.py).
NEVER_PASSED: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("BALLET_",),
        "`BALLET_*` are Ballet's own settings (a session gets its contract's from Ballet)",
    ),
    (
        ("GITHUB_", "GH_", "GIT_"),
        "GitHub and git credentials stay with the worker (a session's pushes go through Ballet)",
    ),
    (("REDIS", "VALKEY"), "the worker's Redis holds every ticket and installation token"),
)
NEVER_PASSED_NAMES = {
    "HOME": "each session gets a fresh, empty HOME of its own",
    "PATH": "a session gets the worker's PATH (its tools: BALLET_SESSION_READONLY_PATHS)",
}


def never_passed(name: str) -> str | None:
    """Why no runtime may name `name` in `env:` or `keys:`, and what to do; None if it may."""
    why = NEVER_PASSED_NAMES.get(name)
    for prefixes, reason in NEVER_PASSED:
        if why is None and name.startswith(prefixes):
            why = reason
    if why is None:
        return None
    return f"Ballet never passes `{name}` to a session: {why}; remove it from .ballet.yml"
