"""The verdict of a head's checks, as the engine should hear it.

GitHub reports each check suite, workflow run and commit status finishing on
its own; a pipeline waits for *the checks*. Each one's end reaches the engine
as a partial `ChecksCompleted` (red is the verdict; green only says it can be
read), and when a wait needs the verdict the engine asks for it (`ReadChecks`):
the edge looks at every check on the head: still running → no event yet; all
done → one `ChecksCompleted` that fails if any failed. Ballet's own check runs
(its stage runs, its config check) never gate Ballet.
"""

from __future__ import annotations

from ballet.core.events import ChecksCompleted
from ballet.github.forge import Forge


async def checks_verdict(
    forge: Forge, repo: str, event: ChecksCompleted, app_id: int | None
) -> ChecksCompleted | None:
    """The event to apply for `event`'s head, or None while other checks still run."""
    summary = await forge.checks_for_ref(repo, event.head_sha)
    if app_id is not None:
        summary = summary.without_app(app_id)
    if not summary.checks:
        return event
    if summary.pending:
        return None
    failed = summary.failed
    return event.model_copy(
        update={
            "partial": False,
            "conclusion": "failure" if failed else "success",
            "names": tuple(c.name for c in (failed or summary.checks)),
        }
    )
