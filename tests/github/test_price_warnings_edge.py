"""A cost budget over a model with no known price, on the fake GitHub: the config
check on a pull request passes with a warning at the model's line, and a ticket
starts with a notice saying so (the real price table, core/price_rules.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.github.app import GitHubApp
from ballet.tickets.memo import Memo
from ballet.tickets.repo_config import check_config_in_pr
from fake_github import INSTALLATION_ID, REPO, FakeGitHub, FakePR
from github_edge_kit import RecordingLauncher, labeled, ticket_service
from redis.asyncio import Redis

pytestmark = pytest.mark.anyio

UNPRICED = """\
runtimes:
  local: {adapter: opencode, model: openai/made-up-model, env: [OPENAI_API_KEY]}
default_runtime: local
pipelines:
  default:
    budget: {cost_usd: 10}
    stages: [{id: implement, kind: agent}]
"""


async def test_a_config_pr_passes_with_a_warning_at_the_model(
    forges: GitHubApp, redis: Redis, fake_github: FakeGitHub
) -> None:
    head = "b" * 40
    fake_github.repos[REPO].files[head] = {".ballet.yml": UNPRICED}
    fake_github.prs[(REPO, 5)] = FakePR(
        5, "edit", "main", head, "Budget", "", files=[".ballet.yml"]
    )
    forge = forges.for_installation(INSTALLATION_ID)
    await check_config_in_pr(forge, Memo(redis), REPO, 5, head)
    (run,) = fake_github.check_runs.values()
    assert run["conclusion"] == "success"
    assert run["output"]["title"] == ".ballet.yml is valid, with 1 warning"
    (note,) = run["output"]["annotations"]
    assert (note["annotation_level"], note["start_line"], note["start_column"]) == (
        "warning",
        2,
        37,
    )
    assert note["message"].startswith("warning: model `openai/made-up-model` from openai")


async def test_a_ticket_starts_and_says_its_budget_cannot_count_the_model(
    forges: GitHubApp, redis: Redis, fake_github: FakeGitHub, webhooks_dir: Path
) -> None:
    repo = fake_github.repos[REPO]
    repo.default_branch, repo.branches = "master", {"master": "a" * 40}
    repo.files["master"] = {".ballet.yml": UNPRICED}
    launcher = RecordingLauncher()
    await ticket_service(forges, redis, launcher).on_delivery(labeled(webhooks_dir))
    assert len(launcher.launched) == 1  # a warning, not a refusal
    notices = [c.body for c in fake_github.comments_on(1) if "no known price" in c.body]
    (notice,) = notices
    assert "⚠️ Pipeline `default`, for this ticket:" in notice
    assert "model `openai/made-up-model` from openai has no known price" in notice
    assert launcher.launched[0].spec.budget.ticket_usd == 10
