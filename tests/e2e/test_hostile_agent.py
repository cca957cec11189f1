"""A prompt-injected agent in a real ticket, confined as every session is: it gets
nothing of the worker's, and the ticket still completes.

The attacker knows the deployment's layout (its data dir, the webhook secret file,
the App key file, the workspaces, Redis, Ballet's port, the sandbox's API and git
URLs, the worker's pid) and every secret value it would look for."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from ballet.core.routing import job_key
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.sessions.workspace import directory_name
from process_namespaces import namespace_ends
from scenarios import lands_alone, merged, wait_until

pytestmark = pytest.mark.anyio

HOSTILE = (Path(__file__).parent / "hostile_agent.py").read_text()
HOSTILE_YML = demo.BALLET_YML.replace(".ballet/agent.py", ".ballet/hostile.py")


async def test_a_hostile_agent_gets_nothing_and_the_ticket_completes(
    stack: Stack, tmp_path: Path
) -> None:
    settings = stack.settings
    data = settings.data_dir.resolve()
    key_file, secret_file = data / "app.pem", data / "webhook-secret"
    key = settings.private_key_pem() or ""
    webhook_secret = settings.all_webhook_secrets[0]
    data.mkdir(parents=True, exist_ok=True)
    key_file.write_text(key)  # where `ballet serve` and a key path would keep them
    secret_file.write_text(webhook_secret)
    redis = urlsplit(settings.redis_url.get_secret_value() if settings.redis_url else "")
    repo_name = "hostile-agent"
    files = demo.repo_files(lands_alone(HOSTILE_YML)) | {".ballet/hostile.py": HOSTILE}
    request = demo.new_repo_request(repo_name) | {"files": files}
    repo = (await stack.create_repo(request))["full_name"]
    prepared = settings.workspaces.resolve() / "prepared" / "next-session"
    prepared.mkdir(parents=True)  # as a clone made ahead would be, on the worker
    targets = {
        "secrets": [webhook_secret, key.splitlines()[1][:40], "BALLET_PRIVATE_KEY", "ghs_"],
        "worker_pid": os.getpid(),  # the worker runs in this process
        "files": {"key": str(key_file), "webhook_secret": str(secret_file),
                  "valkey_acl": str(data / "valkey" / "users.acl")},
        "workspaces": str(settings.workspaces.resolve()),
        "mirror": str(settings.workspaces.resolve() / "mirrors" / f"{repo}.git"),
        "prepared": str(prepared),
        "ports": {"redis": redis.port or 6379, "web": urlsplit(stack.web_url).port,
                  "github_api": urlsplit(stack.api_url).port},
        "git_url": f"{stack.api_url.rstrip('/')}/{repo}.git",
        "marker": str(tmp_path / "pwned"),
    }  # fmt: skip
    body = demo.ISSUE_BODY + f"\nhostile:targets={json.dumps(targets)}\n"
    number = await ticket_with_body(stack, repo, body)

    view = await wait_until(stack, repo, number, merged, timeout=120)

    findings = await merged_findings(stack, repo)
    got = {name: detail for name, (verdict, detail) in findings.items() if verdict == "got"}
    # The only way down to its own clone shows nothing but its own session.
    own = directory_name(job_key(f"{repo}#{number}", "implement", 1, 1, None))
    assert got.pop("list_workspaces") == f"['{own}']"  # named by its job key
    assert set(got) == {"namespace"}, got
    assert namespace_ends(got["namespace"])  # its setsid child is gone too
    assert not list(tmp_path.glob("pwned*"))  # Ballet's git ran none of its hooks
    assert not (prepared / "planted").exists()  # nor reached a clone made ahead
    # Its attempts through the proxy were refused and said so.
    assert "403" in findings["proxy_redis"][1] and "403" in findings["proxy_github"][1]
    assert view.record is not None and view.record.status == "done"
    assert [run.outcome for run in view.record.history] == ["done", "approve", "pass", "merged"]


async def ticket_with_body(stack: Stack, repo: str, body: str) -> int:
    from ballet.demo.run import file_ticket

    return await file_ticket(stack, repo, demo.ISSUE_TITLE, body, demo.AUTHOR, ())


async def merged_findings(stack: Stack, repo: str) -> dict[str, list[str]]:
    async with stack.user(demo.AUTHOR) as user:
        response = await user.get(f"/repos/{repo}/contents/.ballet-findings.json")
        response.raise_for_status()
        found: dict[str, list[str]] = json.loads(base64.b64decode(response.json()["content"]))
        return found
