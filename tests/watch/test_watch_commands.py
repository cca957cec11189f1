"""A writer's Cancel on a ticket's page reaches the engine: the worker applies it as it
would `/ballet cancel`, and the ticket ends cancelled, its running session stopped."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from ballet.core.record import Record
from ballet.demo import repo as demo
from ballet.tickets.store import RecordStore
from watch_kit import Site, csrf_of, forms_of

pytestmark = pytest.mark.anyio


async def record_when(site: Site, key: str, done: object, timeout: float = 60) -> Record:
    store = RecordStore(site.redis)
    record = None
    async with asyncio.timeout(timeout):
        while record is None or not done(record):  # type: ignore[operator]
            await asyncio.sleep(0.2)
            record = await store.cached(key)
    return record


async def test_a_writers_cancel_ends_the_ticket_cancelled(engine_site: Site) -> None:
    site = engine_site
    async with httpx.AsyncClient(base_url=site.api_url, timeout=30) as admin:
        created = await admin.post("/_sandbox/repos", json=demo.new_repo_request("cancelled"))
        created.raise_for_status()
    repo = f"{demo.OWNER}/cancelled"
    async with site.person(demo.AUTHOR) as alice_on_github:
        issue = await alice_on_github.post(
            f"/repos/{repo}/issues",
            json={"title": "Stop me", "body": demo.ISSUE_BODY + "\ndemo:sleep-implement=60\n"},
        )
        number = issue.json()["number"]
        labelled = await alice_on_github.post(
            f"/repos/{repo}/issues/{number}/labels", json={"labels": ["ballet"]}
        )
        labelled.raise_for_status()
    key = f"{repo}#{number}"
    running = await record_when(
        site, key, lambda r: r.status == "running" and r.open_run is not None
    )
    assert running.stage == "implement"

    ticket = f"/tickets/{repo}/{number}"
    alice = await site.sign_in(demo.AUTHOR, next_path=ticket)
    page = await alice.get(ticket)
    assert page.status_code == 200 and "running" in page.text
    cancel = f"{ticket}/commands/cancel"
    assert cancel in forms_of(page.text)
    sent = await alice.post(cancel, data={"csrf": csrf_of(page.text)})
    assert sent.status_code == 303 and sent.headers["location"] == f"{ticket}?sent=cancel"
    assert "on its way" in (await alice.get(sent.headers["location"])).text

    cancelled = await record_when(site, key, lambda r: r.status == "cancelled")
    assert cancelled.history[-1].end is not None  # the running session was stopped
    after = await alice.get(ticket)
    assert "status-cancelled" in after.text and cancel not in after.text
    await alice.aclose()
