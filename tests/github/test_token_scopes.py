"""Tokens limited to the ticket: the App's client asks GitHub (the sandbox) for a token
reaching only some repositories with some permissions, keeps one per scope in Redis,
and a request outside the scope is refused by GitHub, not by Ballet's good manners."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from ballet.github.app import GitHubApp
from ballet.github.client import GitHubAppCredentials
from ballet.github.forge import ForgeError, NotFound
from ballet.github.token_scope import ScopeError, TokenScope
from ballet.sandbox.server import BackgroundSandbox
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[BackgroundSandbox]:
    with BackgroundSandbox(tmp_path / "sandbox", None) as running:
        with httpx.Client(base_url=running.api_url, timeout=30) as admin:
            for name in ("app", "lib", "other"):
                made = admin.post(
                    "/_sandbox/repos",
                    json={"owner": "acme", "name": name, "files": {"README.md": f"# {name}\n"}},
                )
                assert made.status_code == 201, made.text
                owner = {"Authorization": "token sandbox-user:acme"}
                issue = admin.post(f"/repos/acme/{name}/issues", json={"title": "t"}, headers=owner)
                assert issue.json()["number"] == 1
        yield running


@pytest.fixture
async def github(sandbox: BackgroundSandbox, redis: Redis) -> AsyncIterator[GitHubApp]:
    app = sandbox.sandbox.app
    credentials = GitHubAppCredentials(app.app_id, app.private_key_pem.decode(), sandbox.api_url)
    made = GitHubApp(credentials, redis, write_spacing_seconds=0.0)
    yield made
    await made.aclose()


def _minted(sandbox: BackgroundSandbox) -> list[str]:
    return [r["path"] for r in sandbox.sandbox.requests if r["path"].endswith("/access_tokens")]


async def test_a_ticket_forge_cannot_write_outside_its_repositories(
    github: GitHubApp, sandbox: BackgroundSandbox
) -> None:
    installation = await github.installation_of("acme/app")
    assert installation is not None
    ticket = github.for_installation(installation, TokenScope.ticket(["acme/app", "acme/lib"]))
    for repo in ("acme/app", "acme/lib"):
        assert (await ticket.create_comment(repo, 1, "Part of the ticket")).id > 0
        assert await ticket.file_text(repo, "README.md", "main") == f"# {repo[5:]}\n"
    with pytest.raises(NotFound):
        await ticket.create_comment("acme/other", 1, "outside the ticket")
    assert await ticket.file_text("acme/other", "README.md", "main") is None  # 404: not there
    # The installation's own forge still reaches it: the refusal is the token's scope.
    whole = github.for_installation(installation)
    assert await whole.file_text("acme/other", "README.md", "main") == "# other\n"


async def test_git_remotes_carry_a_token_for_that_repository_s_contents_only(
    github: GitHubApp, sandbox: BackgroundSandbox
) -> None:
    installation = await github.installation_of("acme/app")
    assert installation is not None
    forge = github.for_installation(installation)
    remote = await forge.git_remote("acme/app")
    again = await forge.git_remote("acme/app")
    assert again.token == remote.token  # one token per scope, kept (sealed) in Redis
    headers = {"Authorization": f"token {remote.token}"}
    async with httpx.AsyncClient(base_url=sandbox.api_url, headers=headers) as api:
        assert (await api.get("/repos/acme/app/contents/README.md")).status_code == 200
        comment = await api.post("/repos/acme/app/issues", json={"title": "from a push token"})
        assert comment.status_code == 403
        assert (await api.get("/repos/acme/lib/contents/README.md")).status_code == 404
    other = await forge.git_remote("acme/lib")
    assert other.token != remote.token
    assert len(_minted(sandbox)) == 2


async def test_a_scope_the_installation_cannot_give_is_a_clear_error(
    github: GitHubApp, sandbox: BackgroundSandbox
) -> None:
    installation = await github.installation_of("acme/app")
    assert installation is not None
    beyond = github.for_installation(installation, TokenScope.git("acme/nowhere"))
    with pytest.raises(ForgeError, match="not accessible to the parent installation"):
        await beyond.file_text("acme/nowhere", "README.md", "main")
    with pytest.raises(ScopeError, match="one account"):
        TokenScope.ticket(["acme/app", "other/lib"])
    assert TokenScope.ticket(["Acme/Lib", "acme/app"]) == TokenScope.ticket(
        ["acme/app", "acme/lib"]
    )


async def test_a_read_token_reads_its_repository_and_writes_nothing(
    github: GitHubApp, sandbox: BackgroundSandbox
) -> None:
    installation = await github.installation_of("acme/app")
    assert installation is not None
    reads = github.for_installation(installation, TokenScope.reads(["acme/app"]))
    assert (await reads.get_issue("acme/app", 1)).title == "t"
    with pytest.raises(ForgeError) as refused:
        await reads.create_comment("acme/app", 1, "a reader writes nothing")
    assert refused.value.status == 403
    with pytest.raises(NotFound):
        await reads.get_issue("acme/lib", 1)
    # Across the installation (a ticket's lineage): every repository, reading alone.
    lineage = github.for_installation(installation, TokenScope.everywhere({"issues": "read"}))
    assert [(await lineage.get_issue(r, 1)).title for r in ("acme/lib", "acme/other")] == ["t"] * 2
    with pytest.raises(ForgeError) as refused:
        await lineage.create_comment("acme/other", 1, "nor does this one")
    assert refused.value.status == 403
    asked = [r for r in sandbox.sandbox.requests if r["path"] == "/repos/acme/other/issues/1"]
    assert asked[0]["token_permissions"] == {"issues": "read", "metadata": "read"}
    assert "token_repos" not in asked[0]
