"""The issues around an issue, read from GitHub's REST API for `GitHubForge`:
one issue, an issue's parent and sub-issues, and its timeline's cross-references.

Models are lenient and hold only what Ballet reads (`tests/openapi` walks them
against GitHub's OpenAPI description). Paths and shapes:
- `GET /repos/{o}/{r}/issues/{n}` and `.../parent`: an `issue`;
- `GET .../sub_issues`: a list of `issue` (at most 100 per parent, one page);
- `GET .../timeline`: `timeline-issue-events`, of which Ballet reads only
  `cross-referenced` events' `source.issue`.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ballet.github.forge import IssueBrief, NotFound

# A long-lived issue's timeline can run to thousands of events; the first pages
# hold the oldest, which is where an epic's planning references tend to be.
MAX_TIMELINE_PAGES = 3
PER_PAGE = 100


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class PullRef(_Lenient):
    merged_at: str | None = None


class UserRef(_Lenient):
    login: str = ""


class LabelData(_Lenient):
    name: str | None = None


class IssueData(_Lenient):
    """GitHub's `issue` (also the issue half of a pull request)."""

    number: int
    title: str
    state: str  # "open" or "closed"
    html_url: str
    repository_url: str
    body: str | None = None
    # GitHub documents a label as an object or a bare name.
    labels: list[LabelData | str] = []
    pull_request: PullRef | None = None
    parent_issue_url: str | None = None
    user: UserRef | None = None

    def brief(self) -> IssueBrief:
        names = (lbl if isinstance(lbl, str) else lbl.name for lbl in self.labels)
        return IssueBrief(
            repo="/".join(self.repository_url.rstrip("/").split("/")[-2:]),
            number=self.number,
            title=self.title,
            state="open" if self.state == "open" else "closed",
            url=self.html_url,
            is_pull=self.pull_request is not None,
            merged=self.pull_request is not None and self.pull_request.merged_at is not None,
            body=self.body or "",
            labels=tuple(n for n in names if n),
            author=self.user.login if self.user is not None else "",
        )


class CrossSource(_Lenient):
    issue: IssueData | None = None


class CrossReferenced(_Lenient):
    """GitHub's `timeline-cross-referenced-event`."""

    event: str
    source: CrossSource


_issues = TypeAdapter(list[IssueData])


class Client(Protocol):
    async def json(self, method: str, path: str, **kwargs: Any) -> Any: ...

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
    ) -> Any: ...


class IssueGraphCalls:
    """The `Forge` methods that read the issues around an issue, for `GitHubForge`
    (kept here so the adapter's module stays short)."""

    _client: Client

    async def issue_brief(self, repo: str, number: int) -> IssueBrief | None:
        return await issue(self._client, repo, number)

    async def parent_issue(self, repo: str, number: int) -> IssueBrief | None:
        return await parent(self._client, repo, number)

    async def sub_issues(self, repo: str, number: int) -> tuple[IssueBrief, ...]:
        return await sub_issues(self._client, repo, number)

    async def cross_references(self, repo: str, number: int) -> tuple[IssueBrief, ...]:
        return await cross_references(self._client, repo, number)


async def issue(client: Client, repo: str, number: int) -> IssueBrief | None:
    try:
        data = await client.json("GET", f"/repos/{repo}/issues/{number}")
    except NotFound:
        return None
    return IssueData.model_validate(data).brief()


async def parent(client: Client, repo: str, number: int) -> IssueBrief | None:
    try:
        data = await client.json("GET", f"/repos/{repo}/issues/{number}/parent")
    except NotFound:  # no parent, or a GitHub without sub-issues
        return None
    return IssueData.model_validate(data).brief()


async def sub_issues(client: Client, repo: str, number: int) -> tuple[IssueBrief, ...]:
    try:
        data = await client.json(
            "GET", f"/repos/{repo}/issues/{number}/sub_issues", params={"per_page": PER_PAGE}
        )
    except NotFound:
        return ()
    return tuple(i.brief() for i in _issues.validate_python(data))


async def cross_references(client: Client, repo: str, number: int) -> tuple[IssueBrief, ...]:
    found: dict[tuple[str, int], IssueBrief] = {}
    for page in range(1, MAX_TIMELINE_PAGES + 1):
        batch = await client.json(
            "GET",
            f"/repos/{repo}/issues/{number}/timeline",
            params={"per_page": PER_PAGE, "page": page},
        )
        for event in batch:
            if not isinstance(event, dict) or event.get("event") != "cross-referenced":
                continue
            try:
                source = CrossReferenced.model_validate(event).source.issue
            except ValidationError:
                continue  # a reference in a shape Ballet does not know is only lost lineage
            if source is not None:
                brief = source.brief()
                found.setdefault((brief.repo.lower(), brief.number), brief)
        if len(batch) < PER_PAGE:
            break
    return tuple(found.values())
