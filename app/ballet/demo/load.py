"""Many demo tickets at once on a `Stack`, optionally under GitHub faults, with
what they cost: the end-to-end fault test and `bench/faults.py` share it.

Each ticket gets a repository of its own (so their requests can be told
apart by path), or `per_repo` tickets share one (creating a repository runs
the sandbox's CI: a thousand took half an hour); all are labelled at once and
waited for together.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from ballet.core.check_runs import name_of
from ballet.core.record import Record, RecordFormatError, decode_record
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View, find_record

# Repositories created at once before a batch (each push runs the sandbox's CI).
CREATING_AT_ONCE = 8
# Tickets filed at once (two requests each): the sandbox posts their webhooks meanwhile.
FILING_AT_ONCE = 16
# Content-creating requests, as GitHub's secondary limit counts them.
WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
_MARKER = re.compile(r"<!-- ballet:marker (?P<key>[^\s>]+) -->")
STATE = "ballet:state"


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
    def rest(self) -> list[dict[str, Any]]:
        """Requests on the batch's repositories but git over HTTP (not rate-limited)
        and the App's own (its token): what GitHub charges to the tickets."""
        return [r for r in self.requests if ".git/" not in r["path"]]

    @property
    def charged(self) -> int:
        """Charged to the installation's 5,000 an hour: a 304 to a conditional GET is not."""
        return sum(r["status"] != 304 for r in self.rest)

    @property
    def writes(self) -> int:
        return sum(r["method"] in WRITES for r in self.rest)

    @property
    def injected(self) -> int:
        return sum(1 for r in self.requests if "fault" in r)

    def describe(self, label: str) -> str:
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(self.by_status.items()))
        n = max(1, len(self.views))
        return (
            f"{label}: {len(self.views)} tickets merged in {self.seconds:.1f} s; "
            f"{self.total} App requests ({self.total / n:.1f} per ticket; REST"
            f" {self.charged / n:.1f} charged, {self.writes / n:.1f} writes), "
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
    per_repo: int = 1,
    progress: Callable[[int, float], Awaitable[None]] | None = None,
    ballet_yml: str = demo.LANDS_ALONE_YML,
) -> LoadRun:
    """File `count` demo tickets at once, `per_repo` in each repository `<prefix>-<i>`;
    wait for all merges. Each repository's state is read every `poll_seconds`: with
    hundreds of them, a slower poll keeps the watching from costing more than the
    work watched. Tickets in one repository are issues of their own, each on its own
    branch: each adds a test of its own and the same function (merged cleanly).
    `progress(merged, seconds)` is told how many have merged about once a minute;
    `ballet_yml`: the repositories' configuration; by default the demo's, landing with
    no person (`policy: {merge: auto}`), so a run measures Ballet alone."""
    making = asyncio.Semaphore(CREATING_AT_ONCE)

    async def create(i: int) -> str:
        async with making:
            request = demo.new_repo_request(f"{prefix}-{i}", ballet_yml=ballet_yml)
            created = await stack.create_repo(request)
            return str(created["full_name"])

    repos = list(await asyncio.gather(*(create(i) for i in range(-(-count // per_repo)))))
    # Ticket i's repository; filed round the repositories, not one repository after another.
    homes = [repos[i % len(repos)] for i in range(count)]
    # One client each for filing and for looking, not one per request: making an httpx
    # client costs ~20 ms of CPU (its TLS context), and a thousand made at once stall
    # the event loop the web app shares with them until GitHub's webhooks time out.
    filing = asyncio.Semaphore(FILING_AT_ONCE)
    async with stack.admin() as admin, stack.user(demo.AUTHOR) as user:
        if faults is not None:
            (await admin.post("/_sandbox/faults", json=faults)).raise_for_status()
        began = time.monotonic()

        async def filed(repo: str) -> int:
            async with filing:
                return await _file(user, repo)

        merged: dict[str, int] = {}

        async def tell() -> None:
            while progress is not None:
                await asyncio.sleep(60)
                await progress(sum(merged.values()), time.monotonic() - began)

        telling = asyncio.create_task(tell())
        try:
            numbers = await asyncio.gather(*(filed(r) for r in homes))
            wanted: dict[str, list[int]] = {}
            for repo, number in zip(homes, numbers, strict=True):
                wanted.setdefault(repo, []).append(number)
            seen = await asyncio.gather(
                *(
                    _watch(admin, repo, ns, merged, timeout=timeout, every_seconds=poll_seconds)
                    for repo, ns in wanted.items()
                )
            )
        finally:
            telling.cancel()
            summary = None
            if faults is not None:
                ended = await admin.delete("/_sandbox/faults")
                summary = ended.json()
        seconds = time.monotonic() - began
        logged = (await admin.get("/_sandbox/requests", timeout=300)).json()
    views = dict(zip(wanted, seen, strict=True))
    chosen = set(repos)
    mine = [r for r in logged if _repo_of(r["path"]) in chosen]
    return LoadRun(
        views=[(r, n, views[r][n]) for r, n in zip(homes, numbers, strict=True)],
        seconds=seconds,
        requests=mine,
        faults=summary,
    )


_REPO_PATH = re.compile(r"^/repos/([^/]+/[^/]+)(?:/|$)|^/([^/]+/[^/]+)\.git/")


def _repo_of(path: str) -> str | None:
    """The repository a request is on (REST or git over HTTP), if any."""
    match = _REPO_PATH.match(path)
    return (match[1] or match[2]) if match else None


async def _file(user: httpx.AsyncClient, repo: str) -> int:
    """The demo issue, labelled with the trigger label (as `demo.run.file_ticket`).
    A request the sandbox could not answer (a busy one drops connections) is sent
    again: an issue filed twice stays unlabelled, and a label is added once."""
    issue = await _sent(
        user, f"/repos/{repo}/issues", {"title": demo.ISSUE_TITLE, "body": demo.ISSUE_BODY}
    )
    number: int = issue["number"]
    await _sent(user, f"/repos/{repo}/issues/{number}/labels", {"labels": ["ballet"]})
    return number


async def _sent(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> Any:
    for attempt in range(1, 4):
        try:
            response = await client.post(path, json=body)
        except httpx.TransportError:
            if attempt == 3:
                raise
            await asyncio.sleep(attempt)
            continue
        response.raise_for_status()
        return response.json()
    raise AssertionError("unreachable")


async def _watch(
    admin: httpx.AsyncClient,
    repo: str,
    numbers: list[int],
    merged: dict[str, int],
    *,
    timeout: float,
    every_seconds: float,
) -> dict[int, View]:
    """The repository's tickets once all merged (as `demo.watch.wait_until`, on a
    shared client, one look for them all); `merged[repo]`: how many are so far."""
    deadline = time.monotonic() + timeout
    state: dict[str, Any] | None = None
    while True:
        try:
            response = await admin.get(f"/_sandbox/repos/{repo}/state")
            response.raise_for_status()
        except httpx.TransportError:
            pass  # the sandbox cannot answer now (a thousand looks queue): next time
        else:
            state = response.json()
            records = _records(state)
            views = {n: View(state, records.get(n)) for n in numbers}
            merged[repo] = sum(_merged(v) for v in views.values())
            if merged[repo] == len(numbers):
                return views
        if time.monotonic() > deadline:
            late = []
            for n in numbers:
                record = find_record(state, n) if state is not None else None
                if record is None:
                    late.append(f"{repo}#{n}: no tracking record")
                elif record.status != "done":
                    late.append(f"{repo}#{n}: status={record.status}")
            raise TimeoutError(f"did not merge in {timeout:.0f}s: {'; '.join(late)}")
        await asyncio.sleep(every_seconds)


def _records(state: dict[str, Any]) -> dict[int, Record]:
    """Each ticket's newest tracking record in the repository (as `find_record` for
    all at once: a record is decoded once a look, not once per ticket)."""
    found: dict[int, Record] = {}
    for comment in state["comments"]:
        if STATE not in comment["body"]:
            continue
        try:
            record = decode_record(comment["body"])
        except RecordFormatError:
            continue
        number = record.ticket.number
        if number not in found or record.version > found[number].version:
            found[number] = record
    return found


def _merged(view: View) -> bool:
    pull = view.pull
    return (
        view.record is not None and view.record.status == "done" and bool(pull and pull["merged"])
    )


def doubled(view: View, number: int, requests: list[dict[str, Any]]) -> list[str]:
    """What a merged ticket shows more than once, read from GitHub's side: more than one
    pull request, merge, tracking comment, report comment per stage run, check run per
    stage name, or run of a session. Empty when nothing is doubled. `requests`: the
    App's requests on the ticket's repository (a second merge shows only there). Other
    tickets of the same repository are left out: only the issue's own count."""
    found: list[str] = []
    record = view.record
    if record is None:
        return ["no tracking record"]
    # Its pull requests: from its branch, or any branch Ballet names after the issue.
    pulls = [
        p
        for p in view.state["pulls"]
        if p["head"] == record.branch or p["head"].startswith(f"ballet/{number}-")
    ]
    if len(pulls) != 1:
        found.append(f"{len(pulls)} pull requests")
    merging = tuple(f"/pulls/{p['number']}/merge" for p in pulls)
    merges = sum(
        r["method"] == "PUT" and r["path"].endswith(merging) and r["status"] < 300 for r in requests
    )
    if merges != 1:
        found.append(f"{merges} merges")
    tracking = [c for c in view.state["comments"] if STATE in c["body"] and _tracks(c, number)]
    if len(tracking) != 1:
        found.append(f"{len(tracking)} tracking comments")
    markers = [m["key"] for c in view.state["comments"] if (m := _MARKER.search(c["body"]))]
    ticket = f"#{number}:"
    reports = Counter(m for m in markers if ":report:" in m and ticket in m)
    refs = Counter(r.report_ref for r in record.history if r.report_ref is not None)
    if reports != refs:
        found.append(f"report comments {dict(reports)} for runs {dict(refs)}")
    heads = {p["head_sha"] for p in pulls} | {record.head_sha, record.seed_sha}
    ours = [
        r
        for r in view.state["check_runs"]
        if r["name"].startswith("ballet/") and r["head_sha"] in heads
    ]
    twice = [k for k, n in Counter((r["head_sha"], r["name"]) for r in ours).items() if n > 1]
    head = record.head_sha
    on_head = Counter(r["name"] for r in ours if r["head_sha"] == head)
    names = Counter(name_of(r) for r in record.history if r.end is not None)
    if twice or on_head != names:
        found.append(f"check runs {dict(on_head)} on the head for runs {dict(names)}; {twice}")
    runs = Counter((r.stage, r.iteration, r.phase) for r in record.history)
    jobs = Counter(r.job_key for r in record.history if r.job_key is not None)
    again = [r for r in record.history if r.attempt != 1]
    if any(n > 1 for n in runs.values()) or any(n > 1 for n in jobs.values()) or again:
        ran = [(r.stage, r.iteration, r.attempt) for r in record.history]
        found.append(f"sessions ran twice: {ran}")
    if record.ticket.number != number:
        found.append(f"tracking record of #{record.ticket.number}, not #{number}")
    return found


def _tracks(comment: dict[str, Any], number: int) -> bool:
    """A tracking comment of the ticket of issue `number` (wherever it was written)."""
    try:
        return decode_record(comment["body"]).ticket.number == number
    except RecordFormatError:
        return bool(comment["issue"] == number)


def doubled_in_repo(state: dict[str, Any]) -> list[str]:
    """What a repository shows twice that no one ticket may own: a check run of one
    name twice on one head, whichever ticket's head it is."""
    ours = [r for r in state["check_runs"] if r["name"].startswith("ballet/")]
    twice = [k for k, n in Counter((r["head_sha"], r["name"]) for r in ours).items() if n > 1]
    return [f"check runs twice on one head: {twice}"] if twice else []


async def recheck(stack: Stack, run: LoadRun) -> dict[str, list[str]]:
    """Each ticket looked at again once the App has gone quiet (what a late duplicate
    would add shows only then): `repo#n` (or `repo` for what no one ticket owns) →
    what it shows doubled, for those that do."""
    async with stack.admin() as admin:
        # With thousands of tickets, the webhooks still to post and the request log
        # take longer than a request's usual 30 s.
        while True:
            try:
                (await admin.post("/_sandbox/settle", timeout=600)).raise_for_status()
                break
            except httpx.TransportError:
                await asyncio.sleep(1.0)
        logged: list[dict[str, Any]] = (await admin.get("/_sandbox/requests", timeout=300)).json()
        while True:  # until the App makes no more requests for a while
            await asyncio.sleep(3.0)
            now: list[dict[str, Any]] = (await admin.get("/_sandbox/requests", timeout=300)).json()
            if len(now) == len(logged):
                break
            logged = now
    repos = {repo for repo, _, _ in run.views}
    run.requests = [r for r in logged if _repo_of(r["path"]) in repos]
    by_repo: dict[str, list[dict[str, Any]]] = {}
    for r in run.requests:
        by_repo.setdefault(_repo_of(r["path"]) or "", []).append(r)
    numbers: dict[str, list[int]] = {}
    for repo, n, _ in run.views:
        numbers.setdefault(repo, []).append(n)
    looking = asyncio.Semaphore(16)

    async def one(admin: httpx.AsyncClient, repo: str) -> list[tuple[str, list[str]]]:
        for attempt in range(5):
            try:
                async with looking:
                    response = await admin.get(f"/_sandbox/repos/{repo}/state", timeout=120)
                break
            except httpx.TransportError:
                if attempt == 4:
                    raise
                await asyncio.sleep(1.0)
        response.raise_for_status()
        state = response.json()
        found = [(repo, doubled_in_repo(state))]
        records = _records(state)
        for n in numbers[repo]:
            view = View(state, records.get(n))
            found.append((f"{repo}#{n}", doubled(view, n, by_repo.get(repo, []))))
        return found

    async with stack.admin() as admin:
        found = await asyncio.gather(*(one(admin, repo) for repo in numbers))
    return {key: problems for each in found for key, problems in each if problems}
