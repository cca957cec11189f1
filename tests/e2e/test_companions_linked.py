"""Every pull request of a ticket names all the others (issue 37 item 3): as a later
companion's pull request opens, the earlier ones' bodies and the ticket's own are
brought up to date in Ballet's marked block, what a person wrote around it kept, and
a block that already says it is not written again."""

from __future__ import annotations

from typing import Any

import pytest
from ballet.core.companion_text import LINKS_CLOSE, LINKS_OPEN
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from scenarios import comment, merged, new_repo, ticket, wait_until
from test_companions import APPROVED_BY_A_PERSON, merges_in_order, waiting_in

pytestmark = pytest.mark.anyio


async def body_of(stack: Stack, repo: str, number: int) -> str:
    async with stack.user(demo.AUTHOR) as user:
        response = await user.get(f"/repos/{repo}/pulls/{number}")
    response.raise_for_status()
    body: str = response.json()["body"] or ""
    return body


async def edit_body(stack: Stack, repo: str, number: int, body: str) -> None:
    async with stack.user("carol") as user:
        response = await user.patch(f"/repos/{repo}/pulls/{number}", json={"body": body})
    assert response.status_code == 200, response.text


def block(line: str) -> str:
    return f"{LINKS_OPEN}\n{line}\n{LINKS_CLOSE}"


async def body_writes(stack: Stack, repo: str, number: int) -> int:
    """How many times Ballet wrote the pull request's body."""
    async with stack.admin() as admin:
        made: list[dict[str, Any]] = (await admin.get("/_sandbox/requests")).json()
    path = f"/repos/{repo}/pulls/{number}"
    return sum(1 for r in made if (r["method"], r["path"]) == ("PATCH", path))


async def test_a_later_companions_pull_request_is_named_in_every_earlier_ones_body(
    stack: Stack,
) -> None:
    lib = await new_repo(stack, "lib-linked-later")
    api = await new_repo(stack, "api-linked-later")
    yml = f"policy: {{merge: auto}}\ncompanions: [{lib}, {api}]\n" + APPROVED_BY_A_PERSON
    app = await new_repo(stack, "app-linked-later", yml)
    # Iteration 1 changes lib alone; the one after a person's reject changes api too.
    number = await ticket(
        stack, app, directives="demo:companion=lib-linked-later\ndemo:companion=api-linked-later@2"
    )
    view = await wait_until(stack, app, number, waiting_in("approval", 1), timeout=120)
    record = view.record
    assert record is not None and record.pr_number is not None
    own = record.pr_number
    (lib_pr,) = record.companion_prs
    assert lib_pr.number is not None
    # The ticket's own pull request names lib's, and lib's the ticket's own.
    assert block(f"Part of {app}#{number}, with {lib}#{lib_pr.number}.") in await body_of(
        stack, app, own
    )
    lib_body = await body_of(stack, lib, lib_pr.number)
    assert block(f"Part of {app}#{number}, with {app}#{own}.") in lib_body
    # People write around Ballet's block, above and below it.
    await edit_body(stack, lib, lib_pr.number, f"Carol: mind the migration.\n\n{lib_body}\n\nPS")
    app_body = await body_of(stack, app, own)
    await edit_body(stack, app, own, app_body + "\n\nCarol: release notes below.")

    await comment(stack, app, own, "carol", "/ballet reject Change the API too.")

    def api_opened(view: View) -> bool:
        rec = view.record
        return (
            waiting_in("approval", 2)(view)
            and rec is not None
            and all(p.number is not None for p in rec.companion_prs)
            and len(rec.companion_prs) == 2
        )

    view = await wait_until(stack, app, number, api_opened, timeout=120)
    assert view.record is not None
    lib_again, api_pr = view.record.companion_prs
    assert (lib_again.repo, lib_again.number, api_pr.repo) == (lib, lib_pr.number, api)
    named = {
        app: f"{lib}#{lib_pr.number}, {api}#{api_pr.number}",
        lib: f"{app}#{own}, {api}#{api_pr.number}",
        api: f"{app}#{own}, {lib}#{lib_pr.number}",
    }
    numbers = {app: own, lib: lib_pr.number, api: api_pr.number}
    bodies = {repo: await body_of(stack, repo, n) for repo, n in numbers.items()}
    for repo, others in named.items():
        assert block(f"Part of {app}#{number}, with {others}.") in bodies[repo], bodies[repo]
        assert bodies[repo].count(LINKS_OPEN) == 1
    # What people wrote around the block is theirs and stays where they put it.
    assert bodies[lib].startswith("Carol: mind the migration.\n\n")
    assert f"{LINKS_CLOSE}\n\nOpened by Ballet" in bodies[lib] and bodies[lib].endswith("\n\nPS")
    assert bodies[app].startswith(f"Closes #{number}")
    assert bodies[app].endswith("Carol: release notes below.")
    # Each body was written only when its block changed: app's as lib's opened and as
    # api's did, lib's as api's did; api's was opened naming both, and left alone.
    writes = {repo: await body_writes(stack, repo, n) for repo, n in numbers.items()}
    assert writes == {app: 2, lib: 1, api: 0}, writes

    await comment(stack, app, own, "carol", "/ballet approve")
    view = await wait_until(stack, app, number, merged, timeout=120)
    assert await merges_in_order(stack, app, lib, api) == [lib, api, app]
