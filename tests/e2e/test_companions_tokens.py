"""No installation-wide token reaches a ticket's repositories (issue 37 item 5): its
sessions' reads and the reconciler's look at it (a record rebuilt from GitHub after
Redis was lost) go through tokens limited to the repository they read, able to read
and nothing more; its writes through the ticket's own token, as before."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.jobs.reconciler import Reconciler
from ballet.queue import connect
from ballet.wiring import build_services
from scenarios import comment, flush, merged, new_repo, ticket, wait_until
from test_companions import merges_in_order, waiting_in
from test_people_heard import review

pytestmark = pytest.mark.anyio

READS = {"checks": "read", "issues": "read", "metadata": "read", "pull_requests": "read",
         "statuses": "read"}  # fmt: skip


async def requests_made(stack: Stack) -> list[dict[str, Any]]:
    async with stack.admin() as admin:
        made: list[dict[str, Any]] = (await admin.get("/_sandbox/requests")).json()
    return made


async def sweep_once(stack: Stack) -> tuple[str, ...]:
    """One reconciler pass, as the worker's cron runs it; the tickets it ticked."""
    redis = await connect(stack.settings.require_redis_url())
    try:
        services = await build_services(stack.settings, redis)
        assert services.session_jobs is not None
        jobs = services.session_jobs
        try:
            reconciler = Reconciler(
                jobs.redis, jobs.tickets, jobs.artifacts, clock=lambda: datetime.now(UTC)
            )
            return (await reconciler.sweep()).ticked
        finally:
            await services.aclose()
    finally:
        await redis.aclose()


async def test_a_tickets_reads_and_the_reconcilers_look_use_tokens_limited_to_it(
    stack: Stack,
) -> None:
    lib = await new_repo(stack, "lib-scoped")
    app = await new_repo(stack, "app-scoped", f"companions: [{lib}]\n" + demo.BALLET_YML,
                         people_decide=True)  # fmt: skip
    number = await ticket(stack, app, directives="demo:companion=lib-scoped")
    view = await wait_until(stack, app, number, waiting_in("approval", 1), timeout=120)
    assert view.record is not None
    (pr,) = view.record.companion_prs

    # Redis loses everything; the reconciler's next pass finds the ticket by its label
    # and rebuilds its record from the tracking comment, reading through a limited token.
    await flush(stack)
    before = len(await requests_made(stack))
    assert f"{app}#{number}" in await sweep_once(stack)
    swept = (await requests_made(stack))[before:]
    rebuilt = [r for r in swept if r["path"] == f"/repos/{app}/issues/{number}/comments"]
    assert rebuilt and all(
        (r.get("token_repos"), r.get("token_permissions")) == ([app], READS) for r in rebuilt
    ), rebuilt
    labels = [r for r in swept if r["path"] == "/installation/repositories"]
    assert labels and all(
        r.get("token_permissions") == {"issues": "read", "metadata": "read"} for r in labels
    )

    # The ticket goes on from the rebuilt record: approved in both, both land.
    await comment(stack, app, view.record.pr_number or 0, "carol", "/ballet approve")
    await review(stack, lib, pr.number or 0, "carol", "APPROVE", commit_id=pr.head_sha)
    await wait_until(stack, app, number, merged, timeout=120)
    assert await merges_in_order(stack, app, lib) == [lib, app]

    # Not one request to either repository went with the installation-wide token: the
    # ticket's work with the ticket's (its two repositories), every read by a session
    # job or the reconciler with one that reads the one repository it is about (or, for
    # a lineage that may be anywhere in the installation, reads issues and pulls alone).
    ours = [
        r
        for r in await requests_made(stack)
        if any(
            r["path"] == f"/repos/{x}" or r["path"].startswith(f"/repos/{x}/") for x in (app, lib)
        )
        and not r["path"].endswith("/installation")  # the App's own JWT asks this
        and "user" not in r  # a person's token through the App (Ballet's pages)
    ]
    unlimited = [(r["method"], r["path"]) for r in ours if "token_permissions" not in r]
    assert unlimited == []
    reads = [r for r in ours if r.get("token_permissions") == READS]
    assert {r["method"] for r in reads} == {"GET"}
    assert {tuple(r["token_repos"]) for r in reads} == {(app,), (lib,)}
    assert {r["path"] for r in reads} >= {f"/repos/{app}/issues/{number}", f"/repos/{lib}"}
    writes = [r for r in ours if r["method"] != "GET"]
    assert writes and all(r["token_repos"] == sorted([app, lib]) for r in writes)
