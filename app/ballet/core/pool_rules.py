"""The deployment's rule on a `.ballet.yml`: every pool it names must be open to
the repository (`BALLET_POOLS`, `ballet.core.pools`). Checked where the file is
read for a repository (a ticket's start, a pull request's config check), each
refusal pointing at the `pool:` value that names the pool."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ballet.core.config import BalletConfig
from ballet.core.config_rules import Problem

MayUse = Callable[[str], bool]  # pool name -> whether this repository may use it


def pool_refusals(config: BalletConfig, may_use: MayUse) -> Iterator[Problem]:
    for name, runtime in config.runtimes.items():
        if runtime.pool is not None and not may_use(runtime.pool):
            yield _refused(("runtimes", name, "pool"), runtime.pool)
    for pipeline_name, pipeline in config.pipelines.items():
        for i, stage in enumerate(pipeline.stages):
            if stage.pool is not None and not may_use(stage.pool):
                yield _refused(("pipelines", pipeline_name, "stages", i, "pool"), stage.pool)


def _refused(path: tuple[str | int, ...], pool: str) -> Problem:
    # Which repositories the pool is open to is the operator's business: a
    # repository learns only that it is not one of them.
    return Problem(
        path,
        f"this repository may not use pool `{pool}`: the deployment keeps it for other "
        "repositories (BALLET_POOLS); remove `pool:` or ask Ballet's operator for access",
    )
