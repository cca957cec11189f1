"""A commit's checks for `GitHubForge`: where they stand, and what the failing ones
said (kept here so the adapter's module stays short).

Both read the same two requests, `GET .../commits/{ref}/check-runs` (the latest run
of each name, one page) and `GET .../commits/{ref}/status` (the latest status of
each context); the failures add `GET .../check-runs/{id}/annotations` per failing
run that has annotations, until the bound on annotations is reached.
"""

from __future__ import annotations

from pydantic import TypeAdapter

from ballet.github import models as m
from ballet.github.client import PER_PAGE
from ballet.github.forge import (
    FAILED_CONCLUSIONS,
    CheckAnnotation,
    CheckResult,
    ChecksSummary,
    FailedCheck,
    FailedChecks,
)
from ballet.github.issue_graph import Client

# Statuses that failed; "pending" and "success" are the others.
FAILED_STATES = ("failure", "error")
_annotations = TypeAdapter(list[m.CheckAnnotationData])


class ChecksCalls:
    _client: Client

    async def _runs_and_status(
        self, repo: str, ref: str
    ) -> tuple[m.CheckRunList, m.CombinedStatus]:
        runs = m.CheckRunList.model_validate(
            await self._client.json(
                "GET", f"/repos/{repo}/commits/{ref}/check-runs", params={"per_page": PER_PAGE}
            )
        )
        status = m.CombinedStatus.model_validate(
            await self._client.json("GET", f"/repos/{repo}/commits/{ref}/status")
        )
        return runs, status

    async def checks_for_ref(self, repo: str, ref: str) -> ChecksSummary:
        runs, status = await self._runs_and_status(repo, ref)
        checks = [
            CheckResult(
                r.name,
                m.check_status_of(r.status),
                r.conclusion,
                r.html_url,
                r.app.id if r.app else None,
            )
            for r in runs.check_runs
        ]
        for s in status.statuses:
            done = s.state != "pending"
            checks.append(
                CheckResult(
                    s.context,
                    "completed" if done else "in_progress",
                    s.state if done else None,
                    s.target_url,
                )
            )
        combined = m.combined_state_of(status.state) if status.statuses else "none"
        return ChecksSummary(ref=ref, checks=tuple(checks), combined_status=combined)

    async def failed_checks(
        self,
        repo: str,
        sha: str,
        *,
        ignore_app: int | None = None,
        max_checks: int = 20,
        max_annotations: int = 50,
    ) -> FailedChecks:
        runs, status = await self._runs_and_status(repo, sha)
        failing: list[m.CheckRunData | m.StatusData] = [
            r
            for r in runs.check_runs
            if r.conclusion in FAILED_CONCLUSIONS
            and (ignore_app is None or r.app is None or r.app.id != ignore_app)
        ]
        failing += [s for s in status.statuses if s.state in FAILED_STATES]
        kept = failing[: max(max_checks, 0)]
        budget = max(max_annotations, 0)
        checks: list[FailedCheck] = []
        for item in kept:
            if isinstance(item, m.StatusData):
                checks.append(
                    FailedCheck(
                        item.context,
                        "status",
                        item.state,
                        summary=item.description or "",
                        url=item.target_url,
                    )
                )
                continue
            output = item.output or m.CheckOutput()
            read = await self._annotations(repo, item.id, min(budget, output.annotations_count))
            budget -= len(read)
            checks.append(
                FailedCheck(
                    item.name,
                    "check_run",
                    item.conclusion or "failure",
                    title=output.title or "",
                    summary=output.summary or "",
                    url=item.html_url,
                    annotations=read,
                    annotations_left_out=max(output.annotations_count - len(read), 0),
                )
            )
        return FailedChecks(sha, tuple(checks), checks_left_out=len(failing) - len(kept))

    async def _annotations(
        self, repo: str, check_run_id: int, limit: int
    ) -> tuple[CheckAnnotation, ...]:
        """The run's first `limit` annotations, in as few pages as GitHub allows."""
        found: list[CheckAnnotation] = []
        page = 1
        while len(found) < limit:
            per_page = min(PER_PAGE, limit)
            batch = _annotations.validate_python(
                await self._client.json(
                    "GET",
                    f"/repos/{repo}/check-runs/{check_run_id}/annotations",
                    params={"per_page": per_page, "page": page},
                )
            )
            found += (_annotation_of(a) for a in batch)
            if len(batch) < per_page:
                break
            page += 1
        return tuple(found[:limit])


def _annotation_of(a: m.CheckAnnotationData) -> CheckAnnotation:
    return CheckAnnotation(
        path=a.path,
        start_line=a.start_line,
        end_line=a.end_line,
        level=a.annotation_level or "failure",
        message=a.message or "",
        title=a.title,
    )
