"""Reading a ticket the way a person would: from what the sandbox shows on GitHub.

The demo prints progress from it and the end-to-end tests assert on it: the
record comes from the tracking comment's hidden block, not from Redis.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from ballet.core.record import Record, RecordFormatError, decode_record
from ballet.demo.stack import Stack


@dataclass(frozen=True)
class View:
    """One look at a repository: the sandbox's state and the ticket's record in it."""

    state: dict[str, Any]
    record: Record | None

    def comments_on(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.state["comments"] if c["issue"] == number]

    def issue(self, number: int) -> dict[str, Any]:
        return next(i for i in self.state["issues"] if i["number"] == number)

    @property
    def pull(self) -> dict[str, Any] | None:
        if self.record is None or self.record.pr_number is None:
            return None
        number = self.record.pr_number
        return next((p for p in self.state["pulls"] if p["number"] == number), None)


def find_record(state: dict[str, Any], issue: int) -> Record | None:
    """The newest tracking record in the repository for the ticket of `issue`."""
    found: Record | None = None
    for comment in state["comments"]:
        if "ballet:state" not in comment["body"]:
            continue
        try:
            record = decode_record(comment["body"])
        except RecordFormatError:
            continue
        if record.ticket.number == issue and (found is None or record.version > found.version):
            found = record
    return found


async def look(stack: Stack, repo: str, issue: int) -> View:
    state = await stack.state(repo)
    return View(state, find_record(state, issue))


async def wait_until(
    stack: Stack,
    repo: str,
    issue: int,
    done: Callable[[View], bool],
    *,
    timeout: float = 60.0,
    on_view: Callable[[View], None] | None = None,
    every_seconds: float = 0.2,
) -> View:
    """Poll until `done(view)`; on timeout raise with what the ticket showed last.
    A look the sandbox cannot answer now (hundreds of tickets watched at once) is
    tried again at the next poll."""
    deadline = time.monotonic() + timeout
    view: View | None = None
    while True:
        try:
            view = await look(stack, repo, issue)
        except httpx.TransportError:
            pass
        else:
            if on_view is not None:
                on_view(view)
            if done(view):
                return view
        if time.monotonic() > deadline:
            record = view.record if view is not None else None
            summary = (
                "no tracking record"
                if record is None
                else f"status={record.status} stage={record.stage} waiting={record.waiting}"
            )
            raise TimeoutError(f"{repo}#{issue} did not get there in {timeout:.0f}s: {summary}")
        await asyncio.sleep(every_seconds)
