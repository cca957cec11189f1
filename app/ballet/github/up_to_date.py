"""Whether a pull request's head is behind its base where the base wants it up to date:
the calls of `GitHubForge` that read it (kept here so the adapter's module stays short).

GitHub's `mergeable_state` says `behind` only where being out of date is all that holds a
pull request back; a required review missing or a required check pending makes it
`blocked`, which hides a head that is behind too. So where it says `blocked`, Ballet asks
the base's rules whether they want branches up to date (a `required_status_checks` rule
with `strict_required_status_checks_policy`) and the commits themselves how far apart
they are (`GET /repos/{owner}/{repo}/compare/{base}...{head}`, `behind_by`): the
ancestry, not the state's one word (tickets/mergeability.py `behind_base`).
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, TypeAdapter

from ballet.github.errors import NotFound

STRICT = "strict_required_status_checks_policy"


class _Client(Protocol):
    async def json(self, method: str, path: str, **kwargs: Any) -> Any: ...


class _Rule(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    parameters: dict[str, Any] | None = None


class _Comparison(BaseModel):
    model_config = ConfigDict(extra="ignore")

    behind_by: int


_rules = TypeAdapter(list[_Rule])


class UpToDateReads(Protocol):
    """What the `Forge` reads of a head behind its base."""

    async def wants_up_to_date(self, repo: str, branch: str) -> bool:
        """Whether `branch`'s rules want pull requests up to date with it (strict checks)."""
        ...

    async def behind_by(self, repo: str, base: str, head: str) -> int:
        """How many commits `base` (a branch or sha) has that `head` has not."""
        ...


class UpToDateCalls:
    _client: _Client

    async def wants_up_to_date(self, repo: str, branch: str) -> bool:
        # The same read as `base_rules` (github/merge_queue.py): usually an ETag's 304.
        try:
            data = await self._client.json("GET", f"/repos/{repo}/rules/branches/{branch}")
        except NotFound:  # a GitHub without rulesets
            return False
        return any(
            rule.type == "required_status_checks" and (rule.parameters or {}).get(STRICT)
            for rule in _rules.validate_python(data)
        )

    async def behind_by(self, repo: str, base: str, head: str) -> int:
        # One commit a page: the counts are the whole comparison's, the list is not needed.
        data = await self._client.json(
            "GET", f"/repos/{repo}/compare/{base}...{head}", params={"per_page": 1}
        )
        return _Comparison.model_validate(data).behind_by
