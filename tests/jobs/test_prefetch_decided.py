"""The mirror fetched as a session is launched (jobs/prefetch.py) counts from the
engine's decision to start it: a fetch begun after that decision (a ticket's start
fetches to write its branch, in the same drain) is taken, by the prefetch and by
the session job alike; one begun before it never is. Real git: the origin is moved
away once the right fetches are made, so a fetch too many fails."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from ballet.jobs.services import SessionJobs
from ballet.sessions.workspace import WorkspaceError

pytestmark = pytest.mark.anyio

REPO = "octo/demo"


async def test_a_fetch_begun_after_the_decision_is_taken_and_one_before_it_is_not(
    session_jobs: SessionJobs, origin: Path
) -> None:
    prefetch, workspaces = session_jobs.prefetch, session_jobs.workspaces
    assert prefetch is not None
    url = origin.as_uri()
    decided = time.monotonic()
    await workspaces.refresh(REPO, url, None)  # the start's own fetch, after the decision
    after = time.monotonic()
    away = origin.rename(origin.with_name("away"))
    try:
        prefetch.launched("first", REPO, decided=decided)
        since = prefetch.launched_at("first")
        assert since == decided
        await workspaces.refresh(REPO, url, None, since=since)  # taken: no fetch

        prefetch.launched("next", REPO, decided=after)  # decided after that fetch began
        since = prefetch.launched_at("next")
        assert since == after
        with pytest.raises(WorkspaceError, match="could not fetch"):
            await workspaces.refresh(REPO, url, None, since=since)
    finally:
        away.rename(origin)
        await prefetch.aclose()
