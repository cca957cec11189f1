"""The verdict of a head's checks, as the engine should hear it.

GitHub reports each check suite, workflow run and commit status finishing on
its own; a pipeline waits for *the checks*. Each one's end reaches the engine
as a partial `ChecksCompleted` (red is the verdict; green only says it can be
read), and when a wait needs the verdict the engine asks for it (`ReadChecks`):
the edge looks at every check on the head: none yet → no event; some still
running → `ChecksStarted`; all done → one `ChecksCompleted` that fails if any
failed. Ballet's own check runs (its stage runs, its config check) never gate
Ballet.
"""

from __future__ import annotations

from datetime import datetime

from ballet.core.events import ChecksCompleted, ChecksStarted
from ballet.github.forge import Forge


async def read_checks(
    forge: Forge, repo: str, sha: str, app_id: int | None, now: datetime
) -> ChecksCompleted | ChecksStarted | None:
    """What the checks on `sha` say now: their verdict once all are done, that they
    started while some still run, nothing while there are none (a checks wait's
    never-started timeout tells a person)."""
    summary = await forge.checks_for_ref(repo, sha)
    if app_id is not None:
        summary = summary.without_app(app_id)
    if not summary.checks:
        return None
    if summary.pending:
        return ChecksStarted(now=now, head_sha=sha)
    failed = summary.failed
    return ChecksCompleted(
        now=now,
        head_sha=sha,
        conclusion="failure" if failed else "success",
        names=tuple(c.name for c in (failed or summary.checks)),
    )
