"""Warnings, not errors: a cost budget over a model no price is known for.

The model gateway prices each answer from a maintained price table (`pricing.py`,
at the edge: the core never looks it up, it is given `has_price`). An answer of a
model the table does not know is counted in tokens and costs $0, so a cost budget
(`cost_usd`, `session_cost_usd`) covering it would never trip. Such a file is
still valid; `ballet validate`, the config check on a pull request and a ticket's
start say so.

Which model a session asks for is the stage's `model`, else its runtime's. None
(the CLI's own default) and a CLI's aliases (`opus`, `pro`: the CLI sends the full
name it stands for) are not judged: the names the request will carry are priced.
The provider is the adapter's; opencode and aider name it as the model's
`provider/` prefix, or else it is the provider of the runtime's one key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ballet.core.config import Adapter, BalletConfig, Pipeline, ResolvedPipeline, Runtime
from ballet.core.config_rules import Path, Problem

HasPrice = Callable[[str, str], bool]  # (provider, model) -> whether a price is known

FIXED_PROVIDER: dict[Adapter, str] = {
    "claude-code": "anthropic",
    "codex": "openai",
    "gemini": "gemini",
}
# How opencode's and litellm's (aider's) provider prefixes name the gateway's providers.
PREFIXES = {"anthropic": "anthropic", "openai": "openai", "google": "gemini", "gemini": "gemini"}
CLI_ALIASES: dict[Adapter, frozenset[str]] = {
    "claude-code": frozenset({"opus", "sonnet", "haiku", "opusplan", "default", "best"}),
    "gemini": frozenset({"pro", "flash", "flash-lite", "auto"}),
}
ANY_PROVIDER = ("anthropic", "openai", "gemini")


def price_problem(runtime: Runtime, model: str | None, has_price: HasPrice) -> str | None:
    """Why the cost of `model` on `runtime` is unknown, or None when it is priced or
    not judged (no model named, a CLI alias, a `command` runtime)."""
    adapter = runtime.adapter
    if model is None or adapter == "command":
        return None
    if model.split("[")[0] in CLI_ALIASES.get(adapter, frozenset()):
        return None
    name, providers = model, _providers(runtime)
    if adapter in FIXED_PROVIDER:
        providers = (FIXED_PROVIDER[adapter],)
    elif "/" in model:
        prefix, _, name = model.partition("/")
        providers = (PREFIXES.get(prefix, prefix),)
    if any(has_price(provider, name) for provider in providers):
        return None
    via = f" from {providers[0]}" if len(providers) == 1 else ""
    return (
        f"model `{model}`{via} has no known price, so a cost budget never counts it: its "
        'sessions\' spend is counted in tokens and shown as "price unknown". Name a model '
        "with a price, or bound the pipeline with `budget.sessions` instead"
    )


def _providers(runtime: Runtime) -> tuple[str, ...]:
    """The providers the runtime's keys are for: one says where an unprefixed model is."""
    keyed = tuple(sorted(set(runtime.provider_keys.values())))
    return keyed if len(keyed) == 1 else ANY_PROVIDER


def config_price_problems(config: BalletConfig, has_price: HasPrice) -> list[Problem]:
    """Each model a pipeline's cost budget covers with no known price, at the `model:`
    that named it (once per place)."""
    found: dict[Path, Problem] = {}
    for name, pipeline in config.pipelines.items():
        if _has_cost_budget(pipeline):
            for path, runtime, model in _models(config, name, pipeline):
                problem = price_problem(runtime, model, has_price)
                if problem is not None and path not in found:
                    found[path] = Problem(path, f"warning: {problem}")
    return list(found.values())


def _has_cost_budget(pipeline: Pipeline | ResolvedPipeline) -> bool:
    budget = pipeline.budget
    return budget.cost_usd is not None or budget.session_cost_usd is not None


def _models(
    config: BalletConfig, name: str, pipeline: Pipeline
) -> Iterator[tuple[Path, Runtime, str | None]]:
    """(where the model is named, the runtime, the model) of each session the pipeline
    may run: its agent stages and every role (a writer may require any)."""
    runtimes = config.runtimes
    for i, stage in enumerate(pipeline.stages):
        runtime_name = stage.runtime or config.default_runtime
        runtime = runtimes.get(runtime_name or "")
        if stage.kind != "agent" or runtime is None:
            continue  # the deployment's runtime, or an unknown one (an error of its own)
        if stage.model is not None:
            yield ("pipelines", name, "stages", i, "model"), runtime, stage.model
        else:
            yield ("runtimes", runtime_name or "", "model"), runtime, runtime.model
    for role in config.roles.values():
        runtime_name = role.runtime or config.default_runtime
        runtime = runtimes.get(runtime_name or "")
        if runtime is not None:
            yield ("runtimes", runtime_name or "", "model"), runtime, runtime.model


def pipeline_price_problems(pipeline: ResolvedPipeline, has_price: HasPrice) -> tuple[str, ...]:
    """The same for a pipeline a ticket pinned (the deployment's runtime resolved too)."""
    if not _has_cost_budget(pipeline):
        return ()
    sessions = [(r.runtime_config, r.runtime_config.model) for r in pipeline.roles.values()]
    for stage in pipeline.stages:
        if stage.runtime_config is not None:
            sessions.append((stage.runtime_config, stage.model or stage.runtime_config.model))
    said: dict[str, None] = {}
    for runtime, model in sessions:
        problem = price_problem(runtime, model, has_price)
        if problem is not None:
            said[problem] = None
    return tuple(said)
