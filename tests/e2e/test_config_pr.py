"""A pull request that edits `.ballet.yml` gets a `ballet/config` check on its head.

A person pushes a branch over git's smart HTTP and opens the pull request
through the REST API, as on GitHub. An error fails the check with an
annotation at its line; pushing the fix turns the check green on the new head.
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from ballet.tickets.repo_config import CHECK_NAME
from scenarios import new_repo, wait_until

pytestmark = pytest.mark.anyio

TYPO = demo.BALLET_YML.replace("next: {done: review}}", "next: {done: reviw}}")
TYPO_LINE = 10  # the line of `next: {done: reviw}}`
# Still an edit of the file (a PR that no longer touches it gets no check at all).
VALID_EDIT = demo.BALLET_YML.replace("iteration_limit: 3", "iteration_limit: 4")


class Clone:
    """A person's clone, authenticated as GitHub accepts: Basic with a user token."""

    def __init__(self, path: Path, url: str, login: str) -> None:
        basic = base64.b64encode(f"{login}:sandbox-user:{login}".encode()).decode()
        self.path = path
        self._auth = ["-c", f"http.extraHeader=Authorization: Basic {basic}"]
        self._git("clone", "-q", url, str(path), cwd=path.parent)
        self.git("config", "user.name", login)
        self.git("config", "user.email", f"{login}@example.com")

    def _git(self, *args: str, cwd: Path) -> str:
        done = subprocess.run(
            ["git", *self._auth, *args], cwd=cwd, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    def git(self, *args: str) -> str:
        return self._git(*args, cwd=self.path)

    def commit_file(self, name: str, text: str, message: str) -> str:
        (self.path / name).write_text(text)
        self.git("commit", "-q", "-am", message)
        return self.git("rev-parse", "HEAD")


def config_check_on(sha: str) -> Any:
    def done(view: View) -> bool:
        return any(
            r["name"] == CHECK_NAME and r["head_sha"] == sha and r["status"] == "completed"
            for r in view.state["check_runs"]
        )

    return done


def the_check(view: View, sha: str) -> dict[str, Any]:
    runs: list[dict[str, Any]] = view.state["check_runs"]
    [run] = [r for r in runs if r["name"] == CHECK_NAME and r["head_sha"] == sha]
    return run


async def test_config_pr_fails_with_an_annotation_then_passes_once_fixed(
    stack: Stack, tmp_path: Path
) -> None:
    repo = await new_repo(stack, "config-pr")
    clone_url = f"{stack.api_url}/{repo}.git"
    clone = Clone(tmp_path / "clone", clone_url, demo.AUTHOR)
    clone.git("checkout", "-q", "-b", "edit-config")
    broken = clone.commit_file(".ballet.yml", TYPO, "Route implement to review")
    clone.git("push", "-q", "origin", "edit-config")
    async with stack.user(demo.AUTHOR) as user:
        response = await user.post(
            f"/repos/{repo}/pulls",
            json={"title": "Tweak the pipeline", "head": "edit-config", "base": "main"},
        )
        response.raise_for_status()
        pr = response.json()["number"]

    view = await wait_until(stack, repo, pr, config_check_on(broken), timeout=30)

    check = the_check(view, broken)
    assert check["conclusion"] == "failure"
    assert check["output"]["title"] == ".ballet.yml has 1 error"
    assert "unknown target `reviw`" in check["output"]["summary"]
    [note] = check["annotations"]
    assert (note["path"], note["start_line"], note["end_line"]) == (
        ".ballet.yml",
        TYPO_LINE,
        TYPO_LINE,
    )
    assert "reviw" in note["message"] and "review" in note["message"]
    # Checking the file starts no ticket and says nothing in comments.
    assert view.state["comments"] == []
    assert set(view.state["branches"]) == {"main", "edit-config"}

    fixed = clone.commit_file(".ballet.yml", VALID_EDIT, "Fix the typo, allow 4 iterations")
    clone.git("push", "-q", "origin", "edit-config")
    view = await wait_until(stack, repo, pr, config_check_on(fixed), timeout=30)

    check = the_check(view, fixed)
    assert (check["conclusion"], check["output"]["title"]) == ("success", ".ballet.yml is valid")
    assert check["annotations"] == []
    assert the_check(view, broken)["conclusion"] == "failure"  # the old head keeps its verdict
