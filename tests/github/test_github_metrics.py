"""The GitHub edge's metrics move: ticket events, requests by status class, rate limits.

The registry is the process's global one, so every test reads a sample before
and after and asserts the difference.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from ballet.core.commands import Command
from ballet.core.events import CommandIssued, ReconcileTick
from ballet.github.app import GitHubApp
from ballet.github.client import (
    GitHubAppCredentials,
    GitHubClient,
    GitHubClients,
    ServerErrorRetry,
)
from ballet.github.forge import AppIdentity, ForgeError, ForgeUnavailable, RateLimited
from ballet.tickets.service import TicketService
from fake_github import API, APP_ID, INSTALLATION_ID, REPO, FakeGitHub
from github_edge_kit import NOW, RecordingLauncher, labeled, ticket_service
from prometheus_client import REGISTRY
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

APP = AppIdentity(app_id=APP_ID, slug="ballet-test")
TICKET = f"{REPO}#1"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def delta(name: str, **labels: str) -> Callable[[], float]:
    """How much a sample has moved since this call."""
    before = sample(name, **labels)
    return lambda: sample(name, **labels) - before


@pytest.fixture
def service(forges: GitHubApp, redis: Redis) -> TicketService:
    return ticket_service(forges, redis, RecordingLauncher(), app=APP)


def cancel(comment_id: int) -> CommandIssued:
    return CommandIssued(
        now=NOW,
        command=Command(verb="cancel"),
        author="Codertocat",
        permission="admin",
        comment_id=comment_id,
    )


async def test_a_labelled_issue_counts_its_event_and_every_request_by_status_class(
    service: TicketService, fake_github: FakeGitHub, webhooks_dir: Path
) -> None:
    fake_github.repos[REPO].default_branch = "master"
    fake_github.repos[REPO].branches = {"master": "a" * 40}
    requested = delta("ballet_ticket_events_total", event="ticket_requested", result="applied")
    posts = delta("ballet_github_requests_total", method="POST", status_class="2xx")
    gets = delta("ballet_github_requests_total", method="GET", status_class="2xx")
    not_modified = delta("ballet_github_requests_total", method="GET", status_class="3xx")
    not_found = delta("ballet_github_requests_total", method="GET", status_class="4xx")

    await service.on_delivery(labeled(webhooks_dir))
    # The label added again (another delivery): `.ballet.yml` and the labeller's
    # permission are asked again, conditionally, and GitHub answers 304s.
    await service.on_delivery(labeled(webhooks_dir, delivery_id="d-metrics-again"))

    assert requested() == 1
    # Every request the fake saw was counted once, in its class: the ticket start
    # POSTs (token, commit, ref, PR, labels, comments, check run), the 404s of
    # lookups that find nothing yet, and the conditional GETs answered 304.
    assert posts() == sum(method == "POST" for method, _ in fake_github.calls)
    assert not_modified() == fake_github.not_modified >= 1
    assert gets() + not_modified() + not_found() == sum(
        method == "GET" for method, _ in fake_github.calls
    )
    assert not_found() >= 1  # the branch did not exist before Ballet made it


async def test_a_cancelled_ticket_counts_as_ended_and_a_refused_event_as_refused(
    service: TicketService, fake_github: FakeGitHub, webhooks_dir: Path
) -> None:
    fake_github.repos[REPO].default_branch = "master"
    fake_github.repos[REPO].branches = {"master": "a" * 40}
    await service.on_delivery(labeled(webhooks_dir))
    cancelled = delta("ballet_tickets_ended_total", status="cancelled")
    cancels = delta("ballet_ticket_events_total", event="command_issued", result="applied")
    ticks = delta("ballet_ticket_events_total", event="reconcile_tick", result="refused")

    assert await service.handle(TICKET, cancel(501), installation_id=INSTALLATION_ID)
    # An ended ticket has nothing left to time out: the engine refuses the tick.
    tick = ReconcileTick(now=NOW)
    assert not await service.handle(TICKET, tick, installation_id=INSTALLATION_ID)
    # A command on the ended ticket is answered (applied), but ends nothing again.
    assert await service.handle(TICKET, cancel(502), installation_id=INSTALLATION_ID)

    assert (cancels(), ticks(), cancelled()) == (2, 1, 1)


def message(text: str) -> dict[str, str]:
    return {"message": text}


def app_client(redis: Redis, private_key: str) -> GitHubClient:
    """The App's own client, with no retries, so each answer is seen exactly once."""
    return GitHubClients(
        GitHubAppCredentials(app_id=APP_ID, private_key=private_key, api_url=API),
        redis,
        retry=ServerErrorRetry(max_retries=0),
    ).app()


# A canned answer: status, JSON body, headers.
Answer = tuple[int, dict[str, str], dict[str, str]]

PRIMARY: Answer = (
    403,
    message("API rate limit exceeded for installation ID 77."),
    {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1767323045"},
)
SECONDARY_RETRY_AFTER: Answer = (429, message("slow down"), {"retry-after": "30"})
SECONDARY_BY_MESSAGE: Answer = (
    403,
    message("You have exceeded a secondary rate limit. Please wait."),
    {},
)


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (PRIMARY, "primary"),
        (SECONDARY_RETRY_AFTER, "secondary"),
        (SECONDARY_BY_MESSAGE, "secondary"),
    ],
    ids=["quota-used-up", "retry-after", "secondary-message"],
)
async def test_rate_limited_responses_count_by_kind(
    redis: Redis, app_private_key: str, fake_github: FakeGitHub, answer: Answer, kind: str
) -> None:
    limited = delta("ballet_github_rate_limited_total", kind=kind)
    other = delta(
        "ballet_github_rate_limited_total", kind="primary" if kind == "secondary" else "secondary"
    )
    fake_github.fail_next("GET", "/app", answer[0], answer[1], answer[2])
    client = app_client(redis, app_private_key)

    with pytest.raises(RateLimited):
        await client.call("GET", "/app")

    assert (limited(), other()) == (1, 0)


async def test_a_forbidden_response_is_no_rate_limit_and_its_body_still_reads(
    redis: Redis, app_private_key: str, fake_github: FakeGitHub
) -> None:
    # A gzip body, as GitHub sends: the metrics read it and the caller still decodes it.
    fake_github.fail_next(
        "PATCH",
        "/app",
        403,
        headers={"content-encoding": "gzip", "content-type": "application/json"},
        raw=gzip.compress(json.dumps(message("Resource not accessible by integration")).encode()),
    )
    limited = [delta("ballet_github_rate_limited_total", kind=k) for k in ("primary", "secondary")]
    client_errors = delta("ballet_github_requests_total", method="PATCH", status_class="4xx")
    client = app_client(redis, app_private_key)

    with pytest.raises(ForgeError, match="403 Resource not accessible by integration"):
        await client.call("PATCH", "/app")

    assert [moved() for moved in limited] == [0, 0]
    assert client_errors() == 1


async def test_no_response_counts_as_error_and_a_server_error_as_5xx(
    redis: Redis, app_private_key: str, fake_github: FakeGitHub
) -> None:
    errors = delta("ballet_github_requests_total", method="GET", status_class="error")
    server = delta("ballet_github_requests_total", method="GET", status_class="5xx")

    client = app_client(redis, app_private_key)
    fake_github.drop_next("GET", "/app", httpx.ConnectError("connection refused"))
    with pytest.raises(ForgeUnavailable):
        await client.call("GET", "/app")
    fake_github.fail_next("GET", "/app", 502, message("bad gateway"))
    with pytest.raises(ForgeUnavailable):
        await client.call("GET", "/app")

    assert (errors(), server()) == (1, 1)
