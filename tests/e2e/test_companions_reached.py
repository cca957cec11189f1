"""Companions must be repositories the App's installation reaches (issue 37 item 1):
one that is not, or the repository itself, is an error at its line, in the pull
request's `ballet/config` check run and in the refusal that starts no ticket."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import look
from scenarios import new_repo, ticket, wait_until
from test_config_pr import Clone, config_check_on, the_check

pytestmark = pytest.mark.anyio

NOT_REACHED = "is not a repository this installation reaches: install the App on it, or remove it"


async def elsewhere(stack: Stack, name: str) -> str:
    """A repository of another account: another installation of the App."""
    created = await stack.create_repo({**demo.new_repo_request(name), "owner": "globex"})
    full_name: str = created["full_name"]
    return full_name


def companions(*names: str) -> str:
    return "companions:\n" + "".join(f"  - {n}\n" for n in names)


async def test_a_companion_the_installation_does_not_reach_fails_the_config_check(
    stack: Stack, tmp_path: Path
) -> None:
    repo = await new_repo(stack, "reach-app")
    lib = await new_repo(stack, "reach-lib")
    api = await elsewhere(stack, "reach-api")
    clone = Clone(tmp_path / "clone", f"{stack.api_url}/{repo}.git", demo.AUTHOR)
    clone.git("checkout", "-q", "-b", "companions")
    text = (clone.path / ".ballet.yml").read_text()
    head = clone.commit_file(
        ".ballet.yml", companions(lib, api, repo) + text, "Let tickets change the library"
    )
    clone.git("push", "-q", "origin", "companions")
    async with stack.user(demo.AUTHOR) as user:
        opened = await user.post(
            f"/repos/{repo}/pulls",
            json={"title": "Companions", "head": "companions", "base": "main"},
        )
        opened.raise_for_status()
        pr = opened.json()["number"]

    view = await wait_until(stack, repo, pr, config_check_on(head), timeout=30)

    check = the_check(view, head)
    assert check["conclusion"] == "failure"
    assert check["output"]["title"] == ".ballet.yml has 2 errors"
    notes = {(n["start_line"], n["start_column"]): n["message"] for n in check["annotations"]}
    assert set(notes) == {(3, 5), (4, 5)}  # the library (line 2) is the installation's
    assert notes[(3, 5)] == f"`{api}` {NOT_REACHED}"
    assert notes[(4, 5)].startswith(f"`{repo}` is this repository itself")

    fixed = clone.commit_file(".ballet.yml", companions(lib) + text, "Only the library")
    clone.git("push", "-q", "origin", "companions")
    view = await wait_until(stack, repo, pr, config_check_on(fixed), timeout=30)
    assert the_check(view, fixed)["conclusion"] == "success"


async def test_a_ticket_whose_companion_is_not_reached_does_not_start(stack: Stack) -> None:
    api = await elsewhere(stack, "unreached-api")
    # As written (no policy line above it): the refusal names line 2.
    yml = companions(api) + demo.BALLET_YML
    repo = await new_repo(stack, "unreached-app", yml, people_decide=True)
    number = await ticket(stack, repo)

    for _ in range(150):
        view = await look(stack, repo, number)
        said = [c for c in view.comments_on(number) if ".ballet.yml:2:5:" in c["body"]]
        if said:
            break
        await anyio.sleep(0.2)
    else:
        raise AssertionError("no refusal on the issue")
    assert "Ballet did not start this ticket" in said[0]["body"]
    assert f"`{api}` {NOT_REACHED}" in said[0]["body"]
    assert view.record is None
    assert set(view.state["branches"]) == {"main"}
