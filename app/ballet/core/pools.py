"""Agent pools: named sets of workers a session may run on, and which
repositories the operator lets use which pool (`BALLET_POOLS`).

A pool is named in `.ballet.yml` (`pool:` on a runtime or an agent stage) and
served by `ballet worker --pool NAME`. Its name ends up in Redis keys, metric
labels and Kubernetes object names, so it is short, lowercase and plain.

`BALLET_POOLS` reads `POOL=REPO[,REPO…][;POOL=…]`, each REPO being `owner/name`
or `owner/*`, e.g. `gpu=acme/ml,acme/vision;secure=acme/*`. A pool it lists is
open only to those repositories; a pool it does not list is open to every
repository; unset, every repository may use every pool. `default` is always
open to all: repositories that name no pool run there.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

DEFAULT_POOL = "default"
POOL_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
_POOL = re.compile(POOL_PATTERN)
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/([A-Za-z0-9._-]+|\*)$")
FORMAT_HINT = (
    "write POOL=REPO[,REPO…] entries separated by `;`, each REPO `owner/name` or "
    "`owner/*`, e.g. gpu=acme/ml,acme/vision;secure=acme/*"
)


class PoolAccess(BaseModel):
    """Which repositories may use which pool; a pool not in `rules` is open to all."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: dict[str, tuple[str, ...]] = {}

    def allows(self, repo: str, pool: str) -> bool:
        allowed = self.rules.get(pool)
        if allowed is None:
            return True
        owner = repo.partition("/")[0]
        # GitHub's owner and repository names ignore case.
        wanted = {repo.casefold(), f"{owner}/*".casefold()}
        return any(entry.casefold() in wanted for entry in allowed)

    def render(self) -> str:
        """The BALLET_POOLS text of these rules."""
        return ";".join(f"{pool}={','.join(repos)}" for pool, repos in self.rules.items())


def parse_pool_access(text: str) -> PoolAccess:
    """`BALLET_POOLS` as rules; a ValueError saying which entry is wrong and what to write."""
    rules: dict[str, tuple[str, ...]] = {}
    for entry in (part.strip() for part in text.split(";")):
        if not entry:
            continue
        pool, sep, repos = (s.strip() for s in entry.partition("="))
        if not sep or not pool:
            raise ValueError(f"`{entry}` names no pool; {FORMAT_HINT}")
        check_pool_name(pool)
        if pool == DEFAULT_POOL:
            raise ValueError(
                "the `default` pool is open to every repository (those that name no pool run "
                "there); reserve another pool instead"
            )
        if pool in rules:
            raise ValueError(f"pool `{pool}` is listed twice; give its repositories once")
        names = tuple(r.strip() for r in repos.split(",") if r.strip())
        if not names:
            raise ValueError(f"pool `{pool}` lists no repository; {FORMAT_HINT}")
        for name in names:
            if not _REPO.match(name):
                raise ValueError(
                    f"`{name}` (pool `{pool}`) is not owner/name or owner/*; {FORMAT_HINT}"
                )
        rules[pool] = names
    return PoolAccess(rules=rules)


def check_pool_name(name: str) -> str:
    """`name` when it is a pool name; a ValueError saying what one looks like."""
    if not _POOL.match(name):
        raise ValueError(
            f"`{name}` is not a pool name: a lowercase letter, then up to 31 lowercase "
            "letters, digits or `-`"
        )
    return name
