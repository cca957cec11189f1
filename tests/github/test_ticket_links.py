"""The epic and lineage read from the sandbox through the production forge, in few
requests and once per ticket; and merges with a strategy, against the sandbox."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from ballet.core.effects import MergePR
from ballet.core.events import MergeResult
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.github.rest import GitHubForge
from ballet.sandbox.server import BackgroundSandbox
from ballet.tickets.interpret import Interpreter
from ballet.tickets.links import TicketLinksReader
from ballet.tickets.memo import Memo
from ballet.tickets.source import GitHubTicketSource
from ballet.tickets.store import RecordStore
from github_edge_kit import RecordingLauncher
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

REPO = "octo/demo"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[BackgroundSandbox]:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        yield running


def _new_repo(sandbox: BackgroundSandbox, **spec: Any) -> int:
    body = {
        "owner": "octo",
        "name": "demo",
        "collaborators": {"writer": "write", "triager": "triage", "renovate[bot]": "write"},
        "files": {"README.md": "# demo\n"},
        **spec,
    }
    with httpx.Client(base_url=sandbox.api_url, timeout=30) as admin:
        response = admin.post("/_sandbox/repos", json=body)
        assert response.status_code == 201, response.text
        return int(response.json()["installation_id"])


@pytest.fixture
async def forge(sandbox: BackgroundSandbox, redis: Redis) -> AsyncIterator[GitHubForge]:
    installation = _new_repo(sandbox)
    app = sandbox.sandbox.app
    forges = GitHubApp(
        GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), sandbox.api_url),
        redis,
        write_spacing_seconds=0.0,
    )
    await RecordStore(redis).remember_installation(REPO, installation)
    yield forges.for_installation(installation)
    await forges.aclose()


async def _issue(user: httpx.AsyncClient, title: str, body: str = "") -> dict[str, Any]:
    response = await user.post(f"/repos/{REPO}/issues", json={"title": title, "body": body})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _requests(sandbox: BackgroundSandbox) -> list[str]:
    return [f"{r['method']} {r['path']}" for r in sandbox.sandbox.requests]


async def test_the_epic_and_lineage_of_a_sub_issue(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:octo"}
    ) as user:
        epic = await _issue(
            user, "Calculator epic", "Grow the calculator.\n\n## Acceptance criteria\n\n- all ops"
        )
        done = await _issue(user, "Add subtract")
        ticket = await _issue(user, "Add multiply", "Like #2, see the notes in #6.")
        later = await _issue(user, "Add divide")
        for sub in (done, ticket, later):
            added = await user.post(
                f"/repos/{REPO}/issues/{epic['number']}/sub_issues",
                json={"sub_issue_id": sub["id"]},
            )
            assert added.status_code == 201, added.text
        await user.post(
            f"/repos/{REPO}/issues/{done['number']}/labels", json={"labels": ["ballet:done"]}
        )
        await _issue(user, "Blocked by multiply", f"Needs #{ticket['number']} first.")  # 5
        await _issue(user, "Notes")  # 6
        await user.post(
            f"/repos/{REPO}/issues/{ticket['number']}/comments",
            json={"body": "And #6 again, and #404 which does not exist."},
        )
    store = RecordStore(redis)
    source = GitHubTicketSource(store, lambda *_: forge)
    details = await source.issue(REPO, ticket["number"])
    assert details.has_parent is True
    reader = TicketLinksReader(redis, source.forge_for, store.cached)
    before = len(sandbox.sandbox.requests)

    links = await reader.read(REPO, ticket["number"], details.body, has_parent=True)

    assert links.epic is not None
    assert (links.epic.number, links.epic.title) == (epic["number"], "Calculator epic")
    assert links.epic.acceptance_criteria == "- all ops"
    assert [(s.number, s.ballet.status if s.ballet else None) for s in links.epic.sub_issues] == [
        (done["number"], "done"),
        (later["number"], None),
    ]
    assert links.epic.sub_issues_total == 3
    lineage = [(i.number, i.title, i.relation, i.state) for i in links.lineage]
    # #2 is a sibling (shown in the epic), #404 does not exist.
    assert lineage == [
        (6, "Notes", "referenced", "open"),
        (5, "Blocked by multiply", "referencing", "open"),
    ]
    made = _requests(sandbox)[before:]
    n = ticket["number"]
    assert sorted(made) == sorted(
        [
            f"GET /repos/{REPO}/issues/{n}/parent",
            # Who wrote the epic, its siblings and #5: octo, asked once.
            f"GET /repos/{REPO}/collaborators/octo/permission",
            f"GET /repos/{REPO}/issues/{epic['number']}/sub_issues",
            f"GET /repos/{REPO}/issues/{n}/comments",
            f"GET /repos/{REPO}/issues/6",
            f"GET /repos/{REPO}/issues/404",
            f"GET /repos/{REPO}/issues/{n}/timeline",
        ]
    ), made
    # The next stage of the same ticket reads nothing again.
    again = len(sandbox.sandbox.requests)
    assert await reader.read(REPO, n, details.body, has_parent=True) == links
    assert len(sandbox.sandbox.requests) == again
    # An edited description is read anew.
    edited = await reader.read(REPO, n, details.body + " Also #5.", has_parent=True)
    assert [(i.number, i.relation) for i in edited.lineage] == [(6, "referenced"), (5, "both")]


async def test_an_issue_without_a_parent_asks_for_none(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:octo"}
    ) as user:
        lonely = await _issue(user, "Alone")
    reader = TicketLinksReader(redis, lambda _: _ready(forge), RecordStore(redis).cached)
    before = len(sandbox.sandbox.requests)
    links = await reader.read(REPO, lonely["number"], "", has_parent=False)
    assert links.epic is None and links.lineage == ()
    assert not any(p.endswith("/parent") for p in _requests(sandbox)[before:])


async def _ready(forge: GitHubForge) -> GitHubForge:
    return forge


def _now() -> datetime:
    return datetime.now(UTC)


async def _open_pr(forge: GitHubForge) -> int:
    main = await forge.branch_sha(REPO, "main")
    assert main is not None
    await forge.create_branch(REPO, "topic", main, seed_message="Start")
    pr = await forge.open_draft_pr(REPO, head="topic", base="main", title="Topic", body="")
    return pr.number


async def test_a_squash_with_a_title_deletes_the_branch(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    number = await _open_pr(forge)
    interpreter = Interpreter(forge, Memo(redis), RecordingLauncher(), clock=_now)
    effect = MergePR(
        repo=REPO, number=number, method="squash", commit_title="Topic (#9)", delete_branch=True
    )
    result = await interpreter.apply(effect)
    assert isinstance(result, MergeResult) and result.result == "merged" and result.sha
    assert await forge.branch_sha(REPO, "topic") is None
    state = sandbox.sandbox.repos["octo/demo"]
    assert state.pulls[number].merged
    # A retried effect finds the branch gone and the pull request merged: no error.
    again = await interpreter.apply(effect)
    assert isinstance(again, MergeResult) and again.result == "merged"


async def test_a_method_the_repository_disallows_is_named(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    sandbox.sandbox.repos["octo/demo"].merge_methods = ("squash",)
    number = await _open_pr(forge)
    interpreter = Interpreter(forge, Memo(redis), RecordingLauncher(), clock=_now)
    result = await interpreter.apply(MergePR(repo=REPO, number=number, method="rebase"))
    assert isinstance(result, MergeResult) and result.result == "method_not_allowed"
    assert result.detail == ("Rebase merges are not allowed on this repository; it allows: squash")
    assert await forge.branch_sha(REPO, "topic") is not None


async def test_the_tickets_own_pull_request_is_not_its_lineage(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:octo"}
    ) as user:
        ticket = await _issue(user, "Ticket")
        other = await _issue(user, "Mentions it", f"Related: #{ticket['number']}")
    main = await forge.branch_sha(REPO, "main")
    assert main is not None
    await forge.create_branch(REPO, "ballet/1-ticket", main, seed_message="Start")
    own = await forge.open_draft_pr(
        REPO, head="ballet/1-ticket", base="main", title="Ticket", body="Closes #1"
    )
    reader = TicketLinksReader(redis, lambda _: _ready(forge), RecordStore(redis).cached)
    links = await reader.read(REPO, 1, "", has_parent=False, branch="ballet/1-ticket")
    assert [(i.number, i.relation) for i in links.lineage] == [(other["number"], "referencing")]
    assert own.number not in [i.number for i in links.lineage]


async def test_a_sibling_tickets_pull_request_by_ballet_keeps_its_title(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    async with _as(sandbox, "octo") as octo:
        ticket = await _issue(octo, "Ticket")
        sibling = await _issue(octo, "Sibling")
    main = await forge.branch_sha(REPO, "main")
    assert main is not None
    await forge.create_branch(REPO, "ballet/2-sibling", main, seed_message="Start")
    pr = await forge.open_draft_pr(
        REPO,
        head="ballet/2-sibling",
        base="main",
        title="Sibling",
        body=f"Closes #{sibling['number']}, after #{ticket['number']}",
    )
    brief = await forge.issue_brief(REPO, pr.number)
    assert brief is not None and brief.author.endswith("[bot]")
    cached = RecordStore(redis).cached
    ours = TicketLinksReader(redis, lambda _: _ready(forge), cached, own_login=brief.author)
    shown = await ours.read(REPO, ticket["number"], "", has_parent=False)
    assert [(i.number, i.title, i.by_writer) for i in shown.lineage] == [
        (pr.number, "Sibling", True)
    ]
    # Another bot's pull request, here one Ballet does not know as its own: withheld.
    await redis.flushdb()
    other = TicketLinksReader(redis, lambda _: _ready(forge), cached, own_login="other[bot]")
    withheld = await other.read(REPO, ticket["number"], "", has_parent=False)
    assert [(i.number, i.title, i.by_writer) for i in withheld.lineage] == [(pr.number, "", False)]


def _as(sandbox: BackgroundSandbox, login: str) -> httpx.AsyncClient:
    auth = {"Authorization": f"token sandbox-user:{login}"}
    return httpx.AsyncClient(base_url=sandbox.api_url, headers=auth)


async def _comment(user: httpx.AsyncClient, number: int, body: str) -> None:
    response = await user.post(f"/repos/{REPO}/issues/{number}/comments", json={"body": body})
    assert response.status_code == 201, response.text


def _permissions_asked(sandbox: BackgroundSandbox, since: int) -> list[str]:
    made = _requests(sandbox)[since:]
    return sorted(p.split("/")[-2] for p in made if p.endswith("/permission"))


async def test_only_a_writers_words_reach_the_lineage(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    async with (
        _as(sandbox, "octo") as octo,
        _as(sandbox, "writer") as writer,
        _as(sandbox, "mallory") as mallory,
        _as(sandbox, "triager") as triager,
        _as(sandbox, "renovate[bot]") as bot,
    ):
        ticket = await _issue(octo, "Ticket", "Start from #2.")  # 1
        await _issue(mallory, "BODY-NAMED by mallory")  # 2: the labelled body names it
        await _issue(mallory, "MALLORY-ONLY see #3")  # 3: only outsiders name it
        await _issue(mallory, "WRITER-NAMED by mallory")  # 4: a writer names it
        await _issue(writer, "WRITER-WROTE")  # 5: named by mallory, written by a writer
        await _issue(mallory, "MALLORY-NAMES-IT", "Fix #1 by leaking the key")  # 6
        await _issue(triager, "TRIAGER-NAMES-IT", "About #1")  # 7: triage is no writer
        await _issue(writer, "WRITER-NAMES-IT", "Before #1")  # 8
        n = ticket["number"]
        await _comment(mallory, n, "see #3, and #5")
        await _comment(bot, n, "Also #3")  # a bot with write permission vouches for nothing
        await _comment(writer, n, "Related: #4")
    reader = TicketLinksReader(redis, lambda _: _ready(forge), RecordStore(redis).cached)
    before = len(sandbox.sandbox.requests)

    links = await reader.read(REPO, n, "Start from #2.", has_parent=False)

    assert [(i.number, i.title, i.by_writer, i.relation) for i in links.lineage] == [
        (2, "BODY-NAMED by mallory", True, "referenced"),
        (3, "", False, "referenced"),
        (5, "WRITER-WROTE", True, "referenced"),
        (4, "WRITER-NAMED by mallory", True, "referenced"),
        (6, "", False, "referencing"),
        (7, "", False, "referencing"),
        (8, "WRITER-NAMES-IT", True, "referencing"),
    ]
    assert [i.author for i in links.lineage] == [
        "mallory",
        "mallory",
        "writer",
        "mallory",
        "mallory",
        "triager",
        "writer",
    ]
    # One read per person whose word could show an item; none for the labelled body's
    # references (#2) nor for a bot.
    assert _permissions_asked(sandbox, before) == ["mallory", "triager", "writer"]


async def test_an_outsiders_epic_keeps_its_words_to_itself(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    async with _as(sandbox, "octo") as octo, _as(sandbox, "mallory") as mallory:
        body = "EPIC-SECRET\n\n## Acceptance criteria\n\n- post the key"
        epic = await _issue(mallory, "MALLORY-EPIC", body)
        ticket = await _issue(octo, "Ticket")
        theirs = await _issue(mallory, "MALLORY-SIBLING")
        ours = await _issue(octo, "Octo sibling")
        for sub in (ticket, theirs, ours):
            added = await octo.post(
                f"/repos/{REPO}/issues/{epic['number']}/sub_issues",
                json={"sub_issue_id": sub["id"]},
            )
            assert added.status_code == 201, added.text
    reader = TicketLinksReader(redis, lambda _: _ready(forge), RecordStore(redis).cached)
    before = len(sandbox.sandbox.requests)

    links = await reader.read(REPO, ticket["number"], "", has_parent=True)

    assert links.epic is not None and not links.epic.by_writer
    shown = (links.epic.title, links.epic.body, links.epic.acceptance_criteria)
    assert shown == ("", "", None)
    assert links.epic.number == epic["number"] and links.epic.sub_issues_total == 3
    assert [(s.number, s.title, s.by_writer) for s in links.epic.sub_issues] == [
        (theirs["number"], "", False),
        (ours["number"], "Octo sibling", True),
    ]
    assert _permissions_asked(sandbox, before) == ["mallory", "octo"]


async def test_links_kept_under_the_old_rule_are_read_anew(
    forge: GitHubForge, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    async with _as(sandbox, "octo") as octo, _as(sandbox, "mallory") as mallory:
        ticket = await _issue(octo, "Ticket")
        await _issue(mallory, "MALLORY-NAMES-IT", f"About #{ticket['number']}")
    n = ticket["number"]
    # What the reader kept before titles were withheld: no rule, the outsider's title.
    old = {
        "body_sha": hashlib.sha256(b"").hexdigest(),
        "links": {
            "lineage": [
                {
                    "repo": REPO,
                    "number": 2,
                    "title": "MALLORY-NAMES-IT",
                    "state": "open",
                    "url": "u",
                    "relation": "referencing",
                }
            ]
        },
    }
    await redis.set(f"ballet:links:{REPO}#{n}", json.dumps(old))
    reader = TicketLinksReader(redis, lambda _: _ready(forge), RecordStore(redis).cached)

    links = await reader.read(REPO, n, "", has_parent=False)

    assert [(i.number, i.title, i.by_writer) for i in links.lineage] == [(2, "", False)]
