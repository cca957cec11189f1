"""Many demo tickets at once on a `Stack`, optionally under GitHub faults, with
what they cost: the end-to-end fault test and `bench/faults.py` share it.

Each ticket gets a repository of its own (so their requests can be told
apart by path); all are labelled at once and waited for together.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ballet.demo import repo as demo
from ballet.demo.run import file_ticket
from ballet.demo.stack import Stack
from ballet.demo.watch import View, wait_until

# Repositories created at once before a batch (each push runs the sandbox's CI).
CREATING_AT_ONCE = 8


@dataclass
class LoadRun:
    """What one batch of tickets did: their final views and the App's requests."""

    views: list[tuple[str, int, View]]
    seconds: float
    requests: list[dict[str, Any]] = field(default_factory=list)  # the batch's repositories'
    faults: dict[str, Any] | None = None  # the sandbox's fault summary

    @property
    def total(self) -> int:
        return len(self.requests)

    @property
    def by_status(self) -> Counter[int]:
        return Counter(int(r["status"]) for r in self.requests)

    @property
    def injected(self) -> int:
        return sum(1 for r in self.requests if "fault" in r)

    def describe(self, label: str) -> str:
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(self.by_status.items()))
        return (
            f"{label}: {len(self.views)} tickets merged in {self.seconds:.1f} s; "
            f"{self.total} App requests ({self.total / max(1, len(self.views)):.1f} per ticket), "
            f"{self.injected} faults injected; statuses {statuses}"
        )


async def run_tickets(
    stack: Stack,
    prefix: str,
    count: int,
    *,
    faults: dict[str, Any] | None = None,
    timeout: float = 300.0,
    poll_seconds: float = 0.2,
) -> LoadRun:
    """File `count` demo tickets at once in repositories `<prefix>-<i>`; wait for all merges.
    Each ticket's state is read every `poll_seconds`: with hundreds of tickets, a
    slower poll keeps the watching from costing more than the work watched."""
    making = asyncio.Semaphore(CREATING_AT_ONCE)

    async def create(i: int) -> str:
        async with making:
            created = await stack.create_repo(demo.new_repo_request(f"{prefix}-{i}"))
            return str(created["full_name"])

    repos = list(await asyncio.gather(*(create(i) for i in range(count))))
    async with stack.admin() as admin:
        if faults is not None:
            (await admin.post("/_sandbox/faults", json=faults)).raise_for_status()
        began = time.monotonic()
        try:
            numbers = await asyncio.gather(
                *(
                    file_ticket(stack, r, demo.ISSUE_TITLE, demo.ISSUE_BODY, demo.AUTHOR)
                    for r in repos
                )
            )
            views = await asyncio.gather(
                *(
                    wait_until(stack, r, n, _merged, timeout=timeout, every_seconds=poll_seconds)
                    for r, n in zip(repos, numbers, strict=True)
                )
            )
        finally:
            summary = None
            if faults is not None:
                ended = await admin.delete("/_sandbox/faults")
                summary = ended.json()
        seconds = time.monotonic() - began
        logged = (await admin.get("/_sandbox/requests")).json()
    mine = [r for r in logged if any(_on(repo, r["path"]) for repo in repos)]
    return LoadRun(
        views=list(zip(repos, numbers, views, strict=True)),
        seconds=seconds,
        requests=mine,
        faults=summary,
    )


def _on(repo: str, path: str) -> bool:
    return path == f"/repos/{repo}" or path.startswith((f"/repos/{repo}/", f"/{repo}.git/"))


def _merged(view: View) -> bool:
    pull = view.pull
    return (
        view.record is not None and view.record.status == "done" and bool(pull and pull["merged"])
    )
