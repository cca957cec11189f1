"""What end-to-end scenarios share: filing tickets, commenting, and what a person sees.

The `assert_*` helpers check a ticket the way a person would on GitHub: the
issue's labels, the pull request's life (draft → ready → merged), the check
runs on its head, the report comments and the tracking comment's record.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ballet.core.check_runs import conclusion_of, name_of
from ballet.core.record import decode_record
from ballet.demo import repo as demo
from ballet.demo.run import file_ticket
from ballet.demo.stack import Stack
from ballet.demo.watch import View, wait_until
from ballet.queue import connect
from markers import find_marker

MARKER = "<!-- ballet:marker "
# This area's own Redis database, emptied before each test; other areas use others.
REDIS_DB = 5
# The database of the tests that run `ballet worker` processes of their own.
BARE_REDIS_DB = 6
STATE = "ballet:state"


# A ruleset on the default branch, as a repository admin writes one (rulesets API).
def main_ruleset(*rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "main",
        "enforcement": "active",
        "target": "branch",
        "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
        "rules": list(rules),
    }


# `ci` required, on a branch up to date with the base: GitHub calls one that is not `behind`.
STRICT_CI = main_ruleset(
    {
        "type": "required_status_checks",
        "parameters": {
            "required_status_checks": [{"context": "ci"}],
            "strict_required_status_checks_policy": True,
        },
    }
)


async def add_ruleset(stack: Stack, repo: str, ruleset: dict[str, Any]) -> None:
    async with stack.user("carol") as admin:  # a repository admin
        made = await admin.post(f"/repos/{repo}/rulesets", json=ruleset)
    assert made.status_code == 201, made.text


_POLICY = re.compile(r"^policy: \{(?P<keys>[^}\n]*)\}$", re.MULTILINE)


def lands_alone(ballet_yml: str) -> str:
    """The `.ballet.yml` with `policy: {merge: auto}`: Ballet lands the ticket with no
    person's approval. Scenarios about anything but the person's step use it (the
    default, `merge: approved`, waits for a writer: test_people_decide has that);
    a file whose policy says `merge:` already keeps it."""
    found = _POLICY.search(ballet_yml)
    if found is None:
        if re.search(r"^policy:", ballet_yml, re.MULTILINE):
            raise ValueError("write the scenario's policy as `policy: {…}` on one line")
        # At the end: the file's own lines keep their numbers (errors point at them).
        return ballet_yml.rstrip("\n") + "\npolicy: {merge: auto}\n"
    if "merge:" in found["keys"]:
        return ballet_yml
    keys = ", ".join(k for k in ("merge: auto", found["keys"].strip()) if k)
    return ballet_yml[: found.start()] + f"policy: {{{keys}}}" + ballet_yml[found.end() :]


async def new_repo(
    stack: Stack, name: str, ballet_yml: str = demo.BALLET_YML, *, people_decide: bool = False
) -> str:
    """A demo repository; its `.ballet.yml` lands with no person unless `people_decide`."""
    yml = ballet_yml if people_decide else lands_alone(ballet_yml)
    created = await stack.create_repo(demo.new_repo_request(name, ballet_yml=yml))
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


def replied_to(comment_id: int) -> Any:
    """Done once Ballet has posted its reply to the comment `comment_id`."""

    def done(view: View) -> bool:
        return any(":reply:" in k and f":{comment_id}:" in k for k in markers(view))

    return done


def outcomes(view: View) -> list[tuple[str, int, str | None]]:
    assert view.record is not None
    return [(run.stage, run.iteration, run.outcome) for run in view.record.history]


def ballet_comments(view: View, number: int) -> list[str]:
    return [c["body"] for c in view.comments_on(number) if MARKER in c["body"]]


def markers(view: View) -> list[str]:
    """The marker of every comment Ballet wrote in the repository."""
    found = (find_marker(c["body"]) for c in view.state["comments"])
    return [m for m in found if m is not None]


def replies_to(view: View, comment_id: int) -> list[str]:
    return [
        c["body"]
        for c in view.state["comments"]
        if ":reply:" in (find_marker(c["body"]) or "")
        and f":{comment_id}:" in (find_marker(c["body"]) or "")
    ]


def ballet_labels(view: View, number: int) -> set[str]:
    return {label for label in view.issue(number)["labels"] if label.startswith("ballet:")}


def ballet_checks(view: View, sha: str) -> dict[str, tuple[str, str | None]]:
    """Ballet's check runs on `sha`: name → (status, conclusion); one run per name."""
    runs = [r for r in view.state["check_runs"] if r["head_sha"] == sha]
    ours = [r for r in runs if r["name"].startswith("ballet/")]
    twice = [name for name, n in Counter(r["name"] for r in ours).items() if n > 1]
    assert not twice, f"more than one check run per name on {sha}: {twice}"
    return {r["name"]: (r["status"], r["conclusion"]) for r in ours}


async def pull_request_actions(
    stack: Stack, repo: str, number: int
) -> list[tuple[str, bool, bool]]:
    """(action, draft, merged) of each `pull_request` webhook about PR `number`, in order."""
    seen: list[tuple[str, bool, bool]] = []
    async with stack.admin() as admin:
        deliveries = (await admin.get("/_sandbox/deliveries")).json()
        for d in deliveries:
            if d["event"] != "pull_request" or d["redelivery"]:
                continue
            payload = (await admin.get(f"/_sandbox/deliveries/{d['id']}")).json()["payload"]
            pr = payload["pull_request"]
            if payload["repository"]["full_name"] == repo and pr["number"] == number:
                seen.append((payload["action"], bool(pr["draft"]), bool(pr["merged"])))
    return seen


def assert_tracking(view: View, number: int) -> None:
    """One tracking comment holds the record; its hidden block decodes to the ticket."""
    assert view.record is not None
    tracking = [c for c in view.state["comments"] if STATE in c["body"]]
    assert len(tracking) == 1, [c["issue"] for c in tracking]
    body = tracking[0]["body"]
    assert decode_record(body) == view.record
    assert view.record.ticket.number == number
    where = view.record.pr_number or number
    assert tracking[0]["issue"] == where
    assert "**Status:** " in body and f"#{number}" in body


def assert_reports(view: View) -> None:
    """Each finished run has exactly one report comment, and no report is orphaned."""
    assert view.record is not None
    refs = [run.report_ref for run in view.record.history if run.report_ref is not None]
    reports = [m for m in markers(view) if ":report:" in m]
    assert Counter(reports) == Counter(refs), (reports, refs)


async def assert_merged_cleanly(stack: Stack, view: View, repo: str, number: int) -> None:
    """What a person sees once a ticket is merged: done label, merged PR, green checks."""
    record, pull = view.record, view.pull
    assert record is not None and pull is not None
    assert record.status == "done" and pull["merged"] and not pull["draft"]
    assert ballet_labels(view, number) == {"ballet:done"}
    # The PR says `Closes #n`, so merging it closed the issue.
    assert view.issue(number)["state"] == "closed"
    assert view.issue(pull["number"])["state"] == "closed"
    # The PR was opened as a draft, marked ready, then merged — in that order.
    actions = await pull_request_actions(stack, repo, pull["number"])
    assert actions[0] == ("opened", True, False), actions
    assert ("ready_for_review", False, False) in actions, actions
    assert actions[-1] == ("closed", False, True), actions
    assert record.branch == pull["head"] and record.head_sha == pull["head_sha"]
    assert view.state["branches"]["main"] == pull["merge_commit_sha"]
    # The last iteration's runs show as green checks on the merged head (with an
    # earlier iteration's, where a return changed no code: a sign-off's changes sent
    # back to verify); every check there is green and nothing still runs.
    last = [r for r in record.history if r.iteration == record.iteration and r.end is not None]
    expected = {name_of(r): ("completed", conclusion_of(r.outcome)) for r in last}
    on_head = ballet_checks(view, pull["head_sha"])
    assert expected.items() <= on_head.items(), (expected, on_head)
    assert all(c == ("completed", "success") for c in on_head.values()), on_head
    ours = [r for r in view.state["check_runs"] if r["name"].startswith("ballet/")]
    assert all(r["status"] == "completed" for r in ours), ours
    assert_tracking(view, number)
    assert_reports(view)


async def flush(stack: Stack) -> None:
    """Redis loses everything (FLUSHDB on the stack's database), as an eviction would."""
    url = stack.settings.redis_url
    assert url is not None
    pool = await connect(url.get_secret_value())
    await pool.flushdb()
    await pool.aclose()


__all__ = ["merged", "status_is", "wait_until", "waiting_for"]


async def e2e_redis(redis_url: str, db: int = REDIS_DB) -> str:
    """This area's Redis database (or `db`), emptied."""
    url = urlunsplit(urlsplit(redis_url)._replace(path=f"/{db}"))
    pool = await connect(url)
    await pool.flushdb()
    await pool.aclose()
    return url
