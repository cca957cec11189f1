"""The pages' world on loopback: the sandbox as GitHub, Ballet's web app on uvicorn, and
(where a test needs the engine) a worker; people signing in through the real OAuth flow.

Tickets are real records made by the core (`advance`) and saved in the real record
store; their session logs go through the real log store (`SessionLogs`), as a
session's capture would write them.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from arq.connections import ArqRedis
from ballet.core.config import Runtime
from ballet.core.events import SessionFinished, TicketRequested
from ballet.core.machine import advance
from ballet.core.record import Record
from ballet.core.report import Report
from ballet.core.resolve import default_config, resolve_pipeline
from ballet.core.spend import Spend
from ballet.demo.stack import free_port
from ballet.jobs.registry import WorkerGroup
from ballet.queue import connect
from ballet.sandbox.server import BackgroundSandbox
from ballet.sessionlog.sink import LogLine
from ballet.sessionlog.steps import Step
from ballet.sessionlog.store import SessionLogs
from ballet.settings import Settings
from ballet.tickets.store import RecordStore
from ballet.web import create_app
from ballet.web.server import WebServer
from ballet.wiring import build_services

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass
class Site:
    api_url: str
    web_url: str
    settings: Settings
    sandbox: BackgroundSandbox
    redis: ArqRedis
    logs: SessionLogs

    def person(self, login: str) -> httpx.AsyncClient:
        """`login` on "GitHub" (the sandbox's API), as tests act for people."""
        return httpx.AsyncClient(
            base_url=self.api_url,
            headers={"Authorization": f"token sandbox-user:{login}"},
            timeout=30,
        )

    def browser(self) -> httpx.AsyncClient:
        """A browser on Ballet's pages: it keeps cookies and follows nothing by itself."""
        return httpx.AsyncClient(base_url=self.web_url, timeout=30)

    async def sign_in(self, login: str, next_path: str = "/tickets") -> httpx.AsyncClient:
        """A browser signed in as `login` through "Sign in with GitHub", cookie and all."""
        browser = self.browser()
        start = await browser.get("/login", params={"next": next_path})
        assert start.status_code == 302, start.text
        authorize = start.headers["location"]
        assert authorize.startswith(f"{self.api_url}/login/oauth/authorize?")
        # On "GitHub", signed in as `login`: it sends the browser back with a code.
        async with self.person(login) as github:
            back = await github.get(authorize)
        assert back.status_code == 302, back.text
        done = await browser.get(back.headers["location"])
        assert done.status_code == 303, done.text
        assert done.headers["location"] == next_path
        assert "ballet_session" in browser.cookies
        return browser

    async def create_repo(
        self, owner: str, name: str, *, private: bool, collaborators: dict[str, str]
    ) -> str:
        async with httpx.AsyncClient(base_url=self.api_url, timeout=30) as admin:
            created = await admin.post(
                "/_sandbox/repos",
                json={
                    "owner": owner,
                    "name": name,
                    "private": private,
                    "collaborators": collaborators,
                },
            )
            created.raise_for_status()
        return f"{owner}/{name}"


def pipeline_runtime() -> Runtime:
    return Runtime(adapter="command", command=("python3", "agent.py"))


async def new_ticket(
    site: Site, repo: str, number: int, title: str, *, now: datetime = T0, tally: bool = False
) -> Record:
    """A ticket as the engine starts it: its first stage's session running (`tally`:
    counted in the ticket index's per-day figures, as the engine's commit counts it)."""
    pipeline = resolve_pipeline(default_config(pipeline_runtime()), ())
    record, _ = advance(
        None,
        TicketRequested(
            now=now,
            repo=repo,
            issue=number,
            author="alice",
            title=title,
            pipeline=pipeline,
            default_branch="main",
        ),
    )
    await RecordStore(site.redis).commit(record, [], None, tally=tally)
    return record


async def finish_session(
    site: Site, record: Record, outcome: str, summary: str, spend: Spend | None = None
) -> Record:
    """The running session ends with `outcome` (and what the model gateway metered):
    the next stage's session starts."""
    run = record.open_run
    assert run is not None and run.job_key is not None
    after, _ = advance(
        record,
        SessionFinished(
            now=T0 + timedelta(minutes=5 * len(record.history)),
            job_key=run.job_key,
            stage=run.stage,
            iteration=run.iteration,
            attempt=run.attempt,
            report=Report(outcome=outcome, summary=summary),
            spend=spend,
            duration_seconds=60,
        ),
    )
    await RecordStore(site.redis).commit(after, [], None)
    return after


def lines(texts: list[str], first: int = 0, stream: str = "stdout") -> list[LogLine]:
    return [
        LogLine(seq=first + i, stream=stream, text=text, at=T0.timestamp() + i)  # type: ignore[arg-type]
        for i, text in enumerate(texts)
    ]


async def finished_log(site: Site, job_key: str, texts: list[str]) -> None:
    """A session's whole log, as its capture keeps it when the session ends."""
    await site.logs.append(job_key, lines(texts))
    steps = [Step(kind="tool", title="run the tests", body=texts[0], exit_code=1)]
    await site.logs.finish(job_key, "".join(f"{t}\n" for t in texts).encode(), steps)


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "no form with a CSRF token on the page"
    return unescape(found[1])


def forms_of(page: str) -> list[str]:
    return [unescape(a) for a in re.findall(r'<form method="post" action="([^"]+)"', page)]


def live_url_of(page: str) -> str:
    found = re.search(r'data-live="([^"]+)"', page)
    assert found, "the page does not follow a live session"
    return unescape(found[1])


async def queued_commands(redis: ArqRedis) -> list[str]:
    """The ticket events queued from the pages (arq's job keys), applied or not."""
    return sorted(k.decode() for k in await redis.keys("arq:job:ticket-event:web:*"))


@contextlib.asynccontextmanager
async def running_site(
    data_dir: Path, redis_url: str, *, worker: bool = False, **overrides: Any
) -> AsyncIterator[Site]:
    """Sandbox, Ballet's web app (and a worker) on `redis_url`, emptied first."""
    pool = await connect(redis_url)
    await pool.flushdb()
    web_port = free_port()
    web_url = f"http://127.0.0.1:{web_port}"
    with BackgroundSandbox(data_dir / "sandbox", webhook_url=f"{web_url}/webhooks") as sandbox:
        app = sandbox.sandbox.app
        fields: dict[str, Any] = {
            "app_id": app.app_id,
            "private_key": app.private_key_pem.decode(),
            "webhook_secret": app.webhook_secret,
            "github_api_url": sandbox.api_url,
            "github_web_url": sandbox.api_url,  # the sandbox serves GitHub's web side too
            "github_client_id": app.client_id,
            "github_client_secret": app.client_secret,
            "public_url": web_url,
            "redis_url": redis_url,
            "data_dir": data_dir / "ballet",
            "write_spacing_seconds": 0.0,
        }
        settings = Settings(**{**fields, **overrides})
        web = WebServer(create_app(settings, redis_url), "127.0.0.1", web_port)
        components = [web, *([WorkerGroup(settings, redis_url, build_services)] if worker else [])]
        tasks = [asyncio.create_task(c.run()) for c in components]
        try:
            await _ready(web_url, tasks)
            yield Site(
                sandbox.api_url,
                web_url,
                settings,
                sandbox,
                pool,
                SessionLogs.from_settings(settings, pool),
            )
        finally:
            for component in components:
                component.stop()
            _, pending = await asyncio.wait(tasks, timeout=20)
            for task in pending:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await pool.aclose(close_connection_pool=True)


async def _ready(web_url: str, tasks: list[asyncio.Task[None]]) -> None:
    async with httpx.AsyncClient(base_url=web_url, timeout=2) as client:
        for _ in range(200):
            for task in tasks:
                if task.done():
                    task.result()
                    raise RuntimeError("Ballet stopped while starting")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get("/readyz")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise RuntimeError(f"Ballet at {web_url} did not become ready")


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")
