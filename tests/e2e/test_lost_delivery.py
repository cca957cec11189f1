"""A delivery GitHub could not hand over is asked for again: the ticket still starts.

GitHub never retries a failed webhook delivery on its own. Here Ballet's web
app is unreachable when the issue is labelled (GitHub's delivery log shows
"failed to connect"); once it is back, the reconciler's next sweep finds the
failed delivery through GitHub's App delivery API and asks for it again, and
the ticket runs to its merge with nobody clicking "Redeliver".
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from ballet.demo.stack import Stack, free_port, running_stack
from scenarios import assert_merged_cleanly, e2e_redis, merged, new_repo, ticket, wait_until

pytestmark = pytest.mark.anyio


@pytest.fixture
async def stack(redis_url: str, tmp_path: Path) -> AsyncIterator[Stack]:
    """The reconciler sweeps every 5 s and asks for a failed delivery 5 s after its
    attempt (by default 30 s and 30 s): the same recipe, sooner."""
    url = await e2e_redis(redis_url)
    async with running_stack(
        tmp_path, redis_url=url, reconcile_seconds=5, redelivery_settle_seconds=5.0
    ) as running:
        yield running


async def point_webhook(stack: Stack, url: str) -> None:
    async with stack.admin() as admin:
        (await admin.put("/_sandbox/webhook", json={"url": url})).raise_for_status()


async def deliveries(stack: Stack) -> list[dict[str, object]]:
    async with stack.admin() as admin:
        listed: list[dict[str, object]] = (await admin.get("/_sandbox/deliveries")).json()
        return listed


async def test_a_label_delivery_that_failed_is_redelivered_and_the_ticket_merges(
    stack: Stack,
) -> None:
    repo = await new_repo(stack, "lost-delivery")
    # A port this test took and let go of: nothing listens, GitHub cannot connect.
    await point_webhook(stack, f"http://127.0.0.1:{free_port()}/webhooks")
    number = await ticket(stack, repo)
    async with stack.admin() as admin:
        await admin.post("/_sandbox/settle")
    labeled = [d for d in await deliveries(stack) if d["action"] == "labeled"]
    assert labeled and all(d["status_code"] is None and d["error"] for d in labeled)

    await point_webhook(stack, f"{stack.web_url}/webhooks")
    view = await wait_until(stack, repo, number, merged, timeout=240)

    await assert_merged_cleanly(stack, view, repo, number)
    again = [d for d in await deliveries(stack) if d["redelivery"] and d["action"] == "labeled"]
    assert len(again) == 1 and again[0]["guid"] == labeled[0]["guid"]
    assert again[0]["status_code"] == 202
