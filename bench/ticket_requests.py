"""The rate-limit budget: GitHub API requests Ballet makes per ticket, and wall time.

Starts the whole product on loopback (the `ballet sandbox demo` stack), then
runs demo tickets one after another, each in its own repository: N on the
default pipeline and N where review asks for changes once (a rework loop).
The sandbox logs every request the App makes (`GET /_sandbox/requests`); a
ticket's are those on its repository plus App-level ones (tokens) made while
it ran. Prints, per ticket, requests, how many were git over HTTP (not REST),
REST writes (POST/PATCH/PUT/DELETE: what GitHub's secondary rate limit
counts), 304s (conditional GETs GitHub does not charge) and seconds from
labelling to merge; then per variant the median charged requests and writes
and the tickets an hour one installation can carry under GitHub's limits
(5,000 requests an hour; 80 content-creating requests a minute, 500 an hour);
then the mean requests per ticket by method and by path template.

Its repositories set `policy: {merge: auto}` (demo.LANDS_ALONE_YML): tickets land
with no person's approval, so the figures are Ballet's alone.

    .venv/bin/python bench/ticket_requests.py [--tickets 3] [--timeout 180]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ballet.demo import repo as demo
from ballet.demo.run import file_ticket
from ballet.demo.stack import Stack, running_stack
from ballet.demo.watch import View, wait_until
from ballet.logs import configure_logging

VARIANTS = {
    "default": "",
    "rework": "\ndemo:review=changes_requested@1\n",
}
WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
METHODS = ("GET", "POST", "PATCH", "PUT", "DELETE")

# Most specific first: the first pattern that matches a path names its template.
TEMPLATES = [
    (re.compile(r"^/repos/[^/]+/[^/]+"), "/repos/{repo}"),
    (re.compile(r"^/[^/]+/[^/]+\.git/"), "/{repo}.git/"),
    (re.compile(r"/labels/[^/]+$"), "/labels/{name}"),
    (re.compile(r"/collaborators/[^/]+"), "/collaborators/{login}"),
    (re.compile(r"/contents/.*$"), "/contents/{path}"),
    (re.compile(r"/git/(refs?)/heads/.*$"), r"/git/\1/heads/{branch}"),
    (re.compile(r"/branches/.*$"), "/branches/{branch}"),
    (re.compile(r"/commits/[^/]+"), "/commits/{ref}"),
    (re.compile(r"/[0-9a-f]{40}\b"), "/{sha}"),
    (re.compile(r"/\d+(?=/|$)"), "/{n}"),
]


def template(path: str) -> str:
    for pattern, replacement in TEMPLATES:
        path = pattern.sub(replacement, path)
    return path


@dataclass(frozen=True)
class TicketRun:
    variant: str
    repo: str
    seconds: float
    iterations: int
    requests: list[dict[str, Any]]

    @property
    def rest_writes(self) -> int:
        return sum(r["method"] in WRITES and ".git/" not in r["path"] for r in self.requests)

    @property
    def charged(self) -> int:
        """What GitHub charges to the installation's 5,000 an hour: REST and GraphQL
        requests on the repository but 304s and git over HTTP. App-level requests (the
        token, the reconciler's first sweep listing installations) are not the ticket's."""
        return sum(
            r["status"] != 304 and ".git/" not in r["path"] and not _app_level(r["path"])
            for r in self.requests
        )

    @property
    def writes(self) -> int:
        """Content-creating requests as the secondary limit counts them (all REST/GraphQL
        writes on the repository; the App's token request is not one)."""
        return sum(
            r["method"] in WRITES and ".git/" not in r["path"] and not _app_level(r["path"])
            for r in self.requests
        )

    @property
    def git(self) -> int:
        """Git over HTTP (clone, fetch, push): not charged to the REST rate limit."""
        return sum(".git/" in r["path"] for r in self.requests)

    @property
    def not_modified(self) -> int:
        return sum(r["status"] == 304 for r in self.requests)


def _app_level(path: str) -> bool:
    """Not the ticket's: the App's own requests, and the reconciler's listing of a
    repository's live tickets by label (once per Redis loss, here the stack's start)."""
    return path.startswith(("/app/", "/installation/")) or (
        path.startswith("/repos/") and path.count("/") == 4 and path.endswith("/issues")
    )


def merged(view: View) -> bool:
    pull, record = view.pull, view.record
    return (
        pull is not None
        and bool(pull["merged"])
        and record is not None
        and (record.status == "done")
    )


async def app_requests(stack: Stack) -> list[dict[str, Any]]:
    async with stack.admin() as admin:
        found: list[dict[str, Any]] = (await admin.get("/_sandbox/requests")).json()
        return found


async def quiet(stack: Stack, still_for: float = 1.5) -> int:
    """Wait until the sandbox is idle and the App has made no request for `still_for` s."""
    async with stack.admin() as admin:
        await admin.post("/_sandbox/settle")
    count = len(await app_requests(stack))
    while True:
        await asyncio.sleep(still_for)
        now = len(await app_requests(stack))
        if now == count:
            return count
        count = now


async def run_ticket(stack: Stack, variant: str, index: int, timeout: float) -> TicketRun:
    # `policy: {merge: auto}`: the ticket lands with no person's approval (a person's
    # review would add their own requests and wait to what is measured).
    request = demo.new_repo_request(f"{variant}-{index}", ballet_yml=demo.LANDS_ALONE_YML)
    created = await stack.create_repo(request)
    repo: str = created["full_name"]
    first = await quiet(stack)  # installing the repository is not the ticket's cost
    start = time.monotonic()
    number = await file_ticket(
        stack, repo, demo.ISSUE_TITLE, demo.ISSUE_BODY + VARIANTS[variant], demo.AUTHOR
    )
    view = await wait_until(stack, repo, number, merged, timeout=timeout)
    seconds = time.monotonic() - start
    await quiet(stack)  # the label and comment updates after the merge count too
    made = (await app_requests(stack))[first:]
    prefix = f"/repos/{repo}/"
    mine = [
        r
        for r in made
        if r["path"] == prefix.rstrip("/")
        or r["path"].startswith(prefix)
        or not r["path"].startswith("/repos/")
    ]
    assert view.record is not None
    return TicketRun(variant, repo, seconds, view.record.iteration, mine)


def print_tickets(runs: list[TicketRun]) -> None:
    print(
        f"{'ticket':<22} {'iters':>5} {'requests':>8} {'of them git':>11} {'REST writes':>11} "
        f"{'304s':>5} {'charged':>7} {'writes':>6} {'seconds':>8}"
    )
    for run in runs:
        print(
            f"{run.repo:<22} {run.iterations:>5} {len(run.requests):>8} {run.git:>11} "
            f"{run.rest_writes:>11} {run.not_modified:>5} {run.charged:>7} {run.writes:>6} "
            f"{run.seconds:>8.1f}"
        )


# GitHub's limits per App installation (docs.github.com, "Rate limits for the REST API").
PER_HOUR = 5000
CONTENT_PER_MINUTE = 80
CONTENT_PER_HOUR = 500


def print_capacity(runs: list[TicketRun]) -> None:
    """Tickets an hour one installation can carry under GitHub's limits, per variant."""
    print(
        f"\n{'variant':<8} {'charged':>8} {'writes':>7} {'by 5000/h':>10} {'by 80/min':>10} "
        f"{'by 500/h':>9} {'tickets/hour':>13}"
    )
    for variant in VARIANTS:
        mine = [r for r in runs if r.variant == variant]
        charged = statistics.median(r.charged for r in mine)
        writes = statistics.median(r.writes for r in mine)
        limits = (PER_HOUR / charged, CONTENT_PER_MINUTE * 60 / writes, CONTENT_PER_HOUR / writes)
        print(
            f"{variant:<8} {charged:>8.0f} {writes:>7.0f} {limits[0]:>10.0f} {limits[1]:>10.0f} "
            f"{limits[2]:>9.1f} {min(limits):>13.1f}"
        )


def print_breakdown(variant: str, runs: list[TicketRun]) -> None:
    n = len(runs)
    by_template: Counter[tuple[str, str]] = Counter()
    for run in runs:
        by_template.update((template(r["path"]), r["method"]) for r in run.requests)
    methods = Counter(method for (_, method), count in by_template.items() for _ in range(count))
    total = sum(methods.values())
    print(f"\n== {variant}: mean per ticket over {n} tickets: {total / n:.1f} requests")
    print("by method: " + ", ".join(f"{m} {methods[m] / n:.1f}" for m in METHODS if methods[m]))
    paths = sorted({path for path, _ in by_template})
    rows = [(path, [by_template[(path, m)] / n for m in METHODS]) for path in paths]
    rows.sort(key=lambda row: -sum(row[1]))
    width = max(len(path) for path, _ in rows)
    print(f"{'path template':<{width}} " + " ".join(f"{m:>6}" for m in METHODS) + f" {'all':>6}")
    for path, counts in rows:
        cells = " ".join(f"{c:>6.1f}" if c else f"{'':>6}" for c in counts)
        print(f"{path:<{width}} {cells} {sum(counts):>6.1f}")


def print_sequence(run: TicketRun) -> None:
    """Every request of one ticket in the order the App made them."""
    print(f"\n== {run.repo}: {len(run.requests)} requests in order")
    for r in run.requests:
        charged = "" if r["status"] == 304 or ".git/" in r["path"] else "*"
        print(f"{charged:1} {r['method']:<6} {r['status']:>3} {template(r['path'])}")


async def main(
    tickets: int, timeout: float, data: Path, spacing: float, sequence: bool, grace: float
) -> None:
    async with running_stack(
        data, write_spacing_seconds=spacing, write_grace_seconds=grace
    ) as stack:
        runs: list[TicketRun] = []
        for variant in VARIANTS:
            for index in range(1, tickets + 1):
                runs.append(await run_ticket(stack, variant, index, timeout))
    print_tickets(runs)
    print_capacity(runs)
    for variant in VARIANTS:
        print_breakdown(variant, [r for r in runs if r.variant == variant])
    if sequence:
        for variant in VARIANTS:
            print_sequence(next(r for r in runs if r.variant == variant))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=3, help="tickets per variant (default 3)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds per ticket")
    parser.add_argument("--spacing", type=float, default=0.0, help="write spacing, seconds")
    # The demo's agents are instant, but on a loaded machine a session can outlast
    # the production grace (5 s) and get its "in progress" writes: the bench counts
    # an instant ticket's writes, as tests/e2e/test_request_budget.py does.
    parser.add_argument(
        "--grace", type=float, default=60.0, help="BALLET_WRITE_GRACE_SECONDS (default 60)"
    )
    parser.add_argument(
        "--sequence",
        action="store_true",
        help="also list each variant's first ticket's requests in order",
    )
    args = parser.parse_args()
    configure_logging("warning")
    with tempfile.TemporaryDirectory(prefix="ballet-bench-") as tmp:
        asyncio.run(
            main(args.tickets, args.timeout, Path(tmp), args.spacing, args.sequence, args.grace)
        )
