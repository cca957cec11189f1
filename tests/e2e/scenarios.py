"""What end-to-end scenarios share: filing tickets, commenting, and pipeline files."""

from __future__ import annotations

from typing import Any

from ballet.demo import repo as demo
from ballet.demo.run import file_ticket
from ballet.demo.stack import Stack
from ballet.demo.watch import View, wait_until

MARKER = "<!-- ballet:marker "


async def new_repo(stack: Stack, name: str, ballet_yml: str = demo.BALLET_YML) -> str:
    created = await stack.create_repo(demo.new_repo_request(name, ballet_yml=ballet_yml))
    full_name: str = created["full_name"]
    return full_name


async def ticket(
    stack: Stack,
    repo: str,
    *,
    directives: str = "",
    title: str = demo.ISSUE_TITLE,
    labels: tuple[str, ...] = (),
) -> int:
    """File the demo issue (with scripted outcomes and type `labels`) and label it."""
    body = demo.ISSUE_BODY + ("\n" + directives.strip() + "\n" if directives else "")
    return await file_ticket(stack, repo, title, body, demo.AUTHOR, labels)


async def comment(stack: Stack, repo: str, number: int, login: str, body: str) -> dict[str, Any]:
    async with stack.user(login) as user:
        response = await user.post(f"/repos/{repo}/issues/{number}/comments", json={"body": body})
        response.raise_for_status()
        created: dict[str, Any] = response.json()
        return created


def status_is(*statuses: str) -> Any:
    def done(view: View) -> bool:
        return view.record is not None and view.record.status in statuses

    return done


def merged(view: View) -> bool:
    pull = view.pull
    return (
        pull is not None
        and bool(pull["merged"])
        and view.record is not None
        and view.record.status == "done"
    )


def waiting_for(kind: str) -> Any:
    def done(view: View) -> bool:
        record = view.record
        return (
            record is not None
            and record.status == "waiting"
            and record.waiting is not None
            and record.waiting.kind == kind
        )

    return done


def outcomes(view: View) -> list[tuple[str, int, str | None]]:
    assert view.record is not None
    return [(run.stage, run.iteration, run.outcome) for run in view.record.history]


def ballet_comments(view: View, number: int) -> list[str]:
    return [c["body"] for c in view.comments_on(number) if MARKER in c["body"]]


__all__ = ["merged", "status_is", "wait_until", "waiting_for"]
