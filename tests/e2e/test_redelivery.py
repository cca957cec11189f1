"""A delivery that arrives again after the ticket finished changes nothing on GitHub.

GitHub redelivers with the same delivery id (a person clicks "Redeliver", or
GitHub retries); a copy can also arrive under a new id once the dedupe key
has expired. Either way there must be no second branch, PR or tracking comment.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import uuid
from typing import Any

import anyio
import httpx
import pytest
from arq.jobs import Job, JobStatus
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from ballet.queue import EVENTS_QUEUE, connect
from scenarios import (
    assert_merged_cleanly,
    comment,
    markers,
    merged,
    new_repo,
    replied_to,
    replies_to,
    status_is,
    ticket,
    wait_until,
)

pytestmark = pytest.mark.anyio


async def trigger_delivery(admin: httpx.AsyncClient, number: int) -> dict[str, Any]:
    """The `issues.labeled` delivery that added the trigger label to issue `number`."""
    for d in (await admin.get("/_sandbox/deliveries")).json():
        if (d["event"], d["action"]) != ("issues", "labeled"):
            continue
        full: dict[str, Any] = (await admin.get(f"/_sandbox/deliveries/{d['id']}")).json()
        payload = full["payload"]
        if payload["issue"]["number"] == number and payload["label"]["name"] == "ballet":
            return full
    raise AssertionError(f"no issues.labeled delivery for the trigger label on #{number}")


async def delivered(admin: httpx.AsyncClient, delivery_id: int) -> dict[str, Any]:
    for _ in range(150):
        d: dict[str, Any] = (await admin.get(f"/_sandbox/deliveries/{delivery_id}")).json()
        if d["status_code"] is not None or d["error"] is not None:
            return d
        await anyio.sleep(0.1)
    raise AssertionError(f"delivery {delivery_id} was never posted")


def what_a_person_sees(view: View) -> dict[str, Any]:
    record = view.record
    assert record is not None
    return {
        "branches": view.state["branches"],
        "pulls": view.state["pulls"],
        "labels": [i["labels"] for i in view.state["issues"]],
        "markers": sorted(m for m in markers(view) if ":reply:" not in m),
        "history": record.history,
        "status": record.status,
        "check_runs": [
            (r["name"], r["head_sha"], r["conclusion"]) for r in view.state["check_runs"]
        ],
    }


async def merged_and_quiet(stack: Stack, repo: str, number: int) -> View:
    """The merged ticket once GitHub's own work is done too: the sandbox's CI on the
    merge commit may still run as the ticket merges, and would change the view later."""
    await wait_until(stack, repo, number, merged, timeout=90)
    async with stack.admin() as admin:
        await admin.post("/_sandbox/settle")
    return await wait_until(stack, repo, number, merged, timeout=30)


async def settled_after(stack: Stack, repo: str, number: int) -> View:
    """Ballet's view once it has handled everything sent so far: a `/ballet status`
    comment is answered only after the events queued before it."""
    asked = await comment(stack, repo, number, demo.AUTHOR, "/ballet status")
    return await wait_until(stack, repo, number, replied_to(asked["id"]), timeout=30)


async def test_redelivered_trigger_label_changes_nothing(stack: Stack) -> None:
    repo = await new_repo(stack, "redelivery")
    number = await ticket(stack, repo)
    view = await merged_and_quiet(stack, repo, number)
    await assert_merged_cleanly(stack, view, repo, number)
    before = what_a_person_sees(view)

    async with stack.admin() as admin:
        original = await trigger_delivery(admin, number)
        response = await admin.post(f"/_sandbox/deliveries/{original['id']}/redeliver")
        assert response.status_code == 202
        again = await delivered(admin, response.json()["id"])
    assert again["guid"] == original["guid"] and again["redelivery"]
    assert again["status_code"] == 200  # Ballet recognised the delivery id: a duplicate

    view = await settled_after(stack, repo, number)
    assert what_a_person_sees(view) == before
    await assert_merged_cleanly(stack, view, repo, number)


async def replay(stack: Stack, event: str, payload: dict[str, Any]) -> None:
    """Send a delivery again under a new id (its dedupe key expired, or GitHub sent it
    twice) and wait until the worker has handled it."""
    body = json.dumps(payload).encode()
    secret = stack.settings.all_webhook_secrets[0].encode()
    delivery_id = str(uuid.uuid4())
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest(),
    }
    async with httpx.AsyncClient(base_url=stack.web_url) as web:
        response = await web.post("/webhooks", content=body, headers=headers)
    assert response.status_code == 202  # a new id: it reaches the ticket service
    pool = await connect(stack.settings.require_redis_url())
    try:
        # A delivery's job keeps no result (jobs/deliveries.py): it is handled once it
        # is gone from the queue. One that failed would be queued again, and stay.
        job = Job(delivery_id, pool, _queue_name=EVENTS_QUEUE)
        async with asyncio.timeout(30):
            while await job.status() != JobStatus.not_found:
                await asyncio.sleep(0.1)
    finally:
        await pool.aclose()


async def test_a_copy_under_a_new_delivery_id_changes_nothing(stack: Stack) -> None:
    repo = await new_repo(stack, "replayed")
    number = await ticket(stack, repo)
    view = await merged_and_quiet(stack, repo, number)
    before = what_a_person_sees(view)

    async with stack.admin() as admin:
        original = await trigger_delivery(admin, number)
    await replay(stack, "issues", original["payload"])

    view = await settled_after(stack, repo, number)
    assert what_a_person_sees(view) == before
    await assert_merged_cleanly(stack, view, repo, number)


async def test_a_replayed_command_is_not_given_twice(stack: Stack) -> None:
    repo = await new_repo(stack, "replayed-command")
    number = await ticket(stack, repo, directives="demo:sleep-implement=3@1")
    await wait_until(stack, repo, number, status_is("running"), timeout=30)
    paused = await comment(stack, repo, number, demo.AUTHOR, "/ballet pause")
    await wait_until(stack, repo, number, status_is("paused"), timeout=30)
    await comment(stack, repo, number, demo.AUTHOR, "/ballet resume")
    view = await merged_and_quiet(stack, repo, number)
    before = what_a_person_sees(view)

    async with stack.admin() as admin:
        for d in (await admin.get("/_sandbox/deliveries")).json():
            if (d["event"], d["action"]) == ("issue_comment", "created"):
                full = (await admin.get(f"/_sandbox/deliveries/{d['id']}")).json()
                if full["payload"]["comment"]["id"] == paused["id"]:
                    break
        else:
            raise AssertionError("no delivery for the pause comment")
    await replay(stack, "issue_comment", full["payload"])

    # Given again, the pause would be refused on a done ticket, with a reply: none came.
    view = await settled_after(stack, repo, number)
    assert replies_to(view, paused["id"]) == []
    assert what_a_person_sees(view) == before
    await assert_merged_cleanly(stack, view, repo, number)
