"""The production adapter and ticket service against the real sandbox, over loopback HTTP.

No fake at all: the sandbox verifies the App's JWT, mints expiring tokens and
keeps repositories in real git, so this is the adapter as it meets GitHub's
shapes (and the proof the lenient response models read the sandbox's JSON).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from ballet.core.config import Runtime
from ballet.core.record import decode_record
from ballet.core.render import marker_for
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.sandbox.server import BackgroundSandbox
from ballet.settings import Settings
from ballet.tickets.live import LiveTickets
from ballet.tickets.memo import Memo
from ballet.tickets.service import TicketService
from ballet.tickets.source import GitHubTicketSource, IssueDetails
from ballet.tickets.store import RecordStore, tracking_marker
from ballet.wiring import EdgeConfigError, build_edge
from fake_github import API, FakeGitHub
from github_edge_kit import Delivery, RecordingLauncher
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

REPO = "octo/demo"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[BackgroundSandbox]:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        yield running


@pytest.fixture
def installation_id(sandbox: BackgroundSandbox) -> int:
    with httpx.Client(base_url=sandbox.api_url, timeout=30) as admin:
        response = admin.post(
            "/_sandbox/repos",
            json={
                "owner": "octo",
                "name": "demo",
                "collaborators": {"writer": "write", "reader": "read"},
                "files": {"README.md": "# demo\n"},
            },
        )
        assert response.status_code == 201, response.text
        return int(response.json()["installation_id"])


@pytest.fixture
async def sandbox_forges(sandbox: BackgroundSandbox, redis: Redis) -> AsyncIterator[GitHubApp]:
    app = sandbox.sandbox.app
    forges = GitHubApp(
        GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), sandbox.api_url),
        redis,
        write_spacing_seconds=0.0,
    )
    yield forges
    await forges.aclose()


async def test_adapter_speaks_the_sandbox(
    sandbox_forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox
) -> None:
    forge = sandbox_forges.for_installation(installation_id)
    assert await forge.default_branch(REPO) == "main"
    assert await forge.file_text(REPO, "README.md", "main") == "# demo\n"
    assert await forge.file_text(REPO, ".ballet.yml", "main") is None
    assert await forge.permission(REPO, "writer") == "write"
    assert await forge.permission(REPO, "nobody") in ("none", "read")
    remote = await forge.git_remote(REPO)
    assert remote.url == f"{sandbox.api_url}/{REPO}.git"
    identity = await sandbox_forges.app_identity()
    assert identity.app_id == sandbox.sandbox.app.app_id
    assert await sandbox_forges.installation_of(REPO) == installation_id
    assert await sandbox_forges.installation_of("octo/absent") is None


async def test_labelled_issue_starts_a_ticket_on_the_sandbox(
    sandbox_forges: GitHubApp,
    installation_id: int,
    sandbox: BackgroundSandbox,
    redis: Redis,
    webhooks_dir: Path,
) -> None:
    launcher = RecordingLauncher()
    identity = await sandbox_forges.app_identity()
    service = TicketService(
        sandbox_forges.for_installation,
        RecordStore(redis),
        Memo(redis),
        launcher,
        app=identity,
        default_runtime=Runtime(adapter="command", command=("python3", "agent.py")),
        clock=lambda: datetime.now(UTC),
        live_tickets=LiveTickets(redis),
    )
    forge = sandbox_forges.for_installation(installation_id)
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:writer"}
    ) as user:
        created = await user.post(
            f"/repos/{REPO}/issues", json={"title": "Spelling error in the README file"}
        )
        assert created.status_code == 201, created.text
        assert created.json()["number"] == 1
    payload: dict[str, Any] = json.loads((webhooks_dir / "issues/labeled.payload.json").read_text())
    payload["label"] = {"name": "ballet"}
    payload["installation"] = {"id": installation_id}
    payload["sender"] = {"login": "writer", "type": "User"}
    payload["repository"] = {**payload["repository"], "full_name": REPO, "default_branch": "main"}
    await service.on_delivery(Delivery(id="sb-1", event="issues", payload=payload))

    pr = await forge.find_pr_by_head(REPO, "ballet/1-spelling-error-in-the-readme-file")
    assert pr is not None and pr.draft and "Closes #1" in pr.body
    comments = await forge.list_comments(REPO, pr.number)
    (tracking,) = [c for c in comments if tracking_marker(f"{REPO}#1") in c.body]
    record = decode_record(tracking.body)
    assert record.pr_number == pr.number and record.status == "running"
    assert marker_for(f"{REPO}#1:tracking::0:0") == tracking_marker(f"{REPO}#1")
    assert len(launcher.launched) == 1


async def test_build_edge_from_settings(sandbox: BackgroundSandbox, redis: Redis) -> None:
    app = sandbox.sandbox.app
    settings = Settings(
        app_id=app.app_id,
        private_key=app.private_key_pem.decode(),
        github_api_url=sandbox.api_url,
    )
    edge = await build_edge(settings, redis, RecordingLauncher())
    try:
        assert isinstance(edge.service, TicketService)
    finally:
        await edge.aclose()
    with pytest.raises(EdgeConfigError, match="BALLET_APP_ID"):
        await build_edge(Settings(github_api_url=sandbox.api_url), redis, RecordingLauncher())


ISSUE_BODY = "Please greet.\n\n- [ ] says hello\n"


async def read_issue(forges: GitHubApp, store: RecordStore, api_url: str) -> IssueDetails:
    details = await GitHubTicketSource(store, forges.for_installation).issue(REPO, 1)
    # The host differs (loopback against github.com); the rest of the URL must not.
    return replace(details, url=urlsplit(details.url).path)


async def test_the_shared_fake_serves_an_issue_as_the_sandbox_does(
    sandbox_forges: GitHubApp,
    installation_id: int,
    sandbox: BackgroundSandbox,
    redis: Redis,
) -> None:
    store = RecordStore(redis)
    await store.remember_installation(REPO, installation_id)
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:writer"}
    ) as user:
        created = await user.post(
            f"/repos/{REPO}/issues",
            json={"title": "Greet", "body": ISSUE_BODY, "labels": ["ballet", "ballet:running"]},
        )
        assert created.status_code == 201, created.text
    from_sandbox = await read_issue(sandbox_forges, store, sandbox.api_url)
    # The fake is another GitHub: none of the sandbox's cached tokens may reach it.
    await redis.flushdb()
    await store.remember_installation(REPO, installation_id)

    fake = FakeGitHub()
    fake.add_repo(REPO)
    fake.add_issue(REPO, 1, title="Greet", body=ISSUE_BODY, labels=("ballet", "ballet:running"))
    app = sandbox.sandbox.app
    fake_forges = GitHubApp(
        GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), API), redis
    )
    try:
        with fake.serving():
            from_fake = await read_issue(fake_forges, store, API)
    finally:
        await fake_forges.aclose()

    assert from_fake == from_sandbox
    assert from_sandbox.labels == ("ballet", "ballet:running")
    assert from_sandbox.url == f"/{REPO}/issues/1"


async def test_live_tickets_are_found_by_label_on_the_sandbox_and_the_fake_alike(
    sandbox_forges: GitHubApp, installation_id: int, sandbox: BackgroundSandbox, redis: Redis
) -> None:
    """What the reconciler asks after Redis lost its live set, on both GitHubs."""
    labelled = [("ballet", "ballet:running"), ("ballet", "ballet:waiting"), ("bug",)]
    async with httpx.AsyncClient(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:writer"}
    ) as user:
        for n, labels in enumerate(labelled, 1):
            created = await user.post(
                f"/repos/{REPO}/issues", json={"title": f"issue {n}", "labels": list(labels)}
            )
            assert created.status_code == 201, created.text
    store = RecordStore(redis)
    source = GitHubTicketSource(
        store, sandbox_forges.for_installation, installations=sandbox_forges.installations
    )
    from_sandbox = await source.live_on_github()
    assert await store.installation_of(REPO) == installation_id

    await redis.flushdb()
    fake = FakeGitHub()
    fake.add_repo(REPO)
    for n, labels in enumerate(labelled, 1):
        fake.add_issue(REPO, n, title=f"issue {n}", labels=labels)
    app = sandbox.sandbox.app
    fake_forges = GitHubApp(
        GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), API), redis
    )
    try:
        with fake.serving():
            from_fake = await GitHubTicketSource(
                RecordStore(redis),
                fake_forges.for_installation,
                installations=fake_forges.installations,
            ).live_on_github()
    finally:
        await fake_forges.aclose()
    assert from_sandbox == from_fake == [f"{REPO}#1", f"{REPO}#2"]
