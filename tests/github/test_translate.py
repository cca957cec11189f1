"""Every real webhook payload translates, or is ignored with a reason."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ballet.core.commands import Command
from ballet.core.events import (
    ChecksCompleted,
    ChecksStarted,
    HeadPushed,
    IssueEdited,
    PullRequestClosed,
    ReviewSubmitted,
)
from ballet.github.forge import AppIdentity
from ballet.github.intents import (
    BaseMoved,
    ConfigChanged,
    ForTicket,
    Ignored,
    InstallationChanged,
    IssueCommands,
    StartTicket,
    TicketTarget,
    ValidateConfigInPR,
)
from ballet.github.translate import translate

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
APP = AppIdentity(app_id=4242, slug="ballet-test")


def _payloads(webhooks_dir: Path) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path in sorted(webhooks_dir.glob("*/*.json")):
        found.append((path.parent.name, path.name, json.loads(path.read_text())))
    return found


def _load(webhooks_dir: Path, name: str, **changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((webhooks_dir / name).read_text())
    payload["installation"] = {"id": 77}
    payload.update(changes)
    return payload


def test_every_real_payload_translates_or_is_ignored_with_a_reason(webhooks_dir: Path) -> None:
    payloads = _payloads(webhooks_dir)
    assert len(payloads) == 111
    kinds: Counter[str] = Counter()
    for event, name, payload in payloads:
        # As delivered, and as an App installation would receive it.
        for variant in (payload, {**payload, "installation": {"id": 77}}):
            intents = translate(event, variant, app=APP, now=NOW)
            assert intents, f"{event}/{name} translated to nothing"
            for intent in intents:
                if isinstance(intent, Ignored):
                    assert intent.reason, f"{event}/{name} ignored without a reason"
                kinds[type(intent).__name__] += 1
    # The real payloads exercise every kind of intent the table produces.
    assert {
        "StartTicket",
        "ForTicket",
        "ValidateConfigInPR",
        "InstallationChanged",
        "Ignored",
    } <= set(kinds)


def test_labelled_issue_starts_a_ticket_candidate(webhooks_dir: Path) -> None:
    payload = _load(webhooks_dir, "issues/labeled.payload.json", label={"name": "ballet"})
    (intent,) = translate("issues", payload, app=APP, now=NOW)
    assert intent == StartTicket(
        installation_id=77,
        repo="Codertocat/Hello-World",
        issue=1,
        title="Spelling error in the README file",
        body=payload["issue"]["body"],
        author="Codertocat",
        labels=("bug",),
        label="ballet",
        requested_by="Codertocat",
        requested_by_is_bot=False,
        default_branch="master",
        now=NOW,
    )


def test_ballets_own_labels_are_ignored(webhooks_dir: Path) -> None:
    status = _load(webhooks_dir, "issues/labeled.payload.json", label={"name": "ballet:running"})
    (intent,) = translate("issues", status, app=APP, now=NOW)
    assert isinstance(intent, Ignored)
    by_bot = _load(
        webhooks_dir,
        "issues/labeled.payload.json",
        label={"name": "ballet"},
        sender={"login": "ballet-test[bot]", "type": "Bot"},
    )
    (intent,) = translate("issues", by_bot, app=APP, now=NOW)
    assert isinstance(intent, Ignored)


def test_delivery_without_installation_is_ignored(webhooks_dir: Path) -> None:
    payload = json.loads((webhooks_dir / "issues/labeled.payload.json").read_text())
    (intent,) = translate("issues", payload, app=APP, now=NOW)
    assert isinstance(intent, Ignored) and "installation" in intent.reason


def test_comment_commands_are_parsed_and_ballets_own_comments_ignored(webhooks_dir: Path) -> None:
    base = _load(webhooks_dir, "issue_comment/created.payload.json")
    comment = {**base["comment"], "body": "thanks\n/ballet retry\n/ballet nonsense"}
    (intent,) = translate("issue_comment", {**base, "comment": comment}, app=APP, now=NOW)
    assert isinstance(intent, IssueCommands)
    assert intent.target == TicketTarget(repo="Codertocat/Hello-World", issue=1)
    assert intent.commands[0] == Command(verb="retry")
    assert len(intent.commands) == 2 and intent.author == "Codertocat"

    by_bot = {**comment, "user": {"login": "ballet-test[bot]", "type": "Bot"}}
    (ignored,) = translate("issue_comment", {**base, "comment": by_bot}, app=APP, now=NOW)
    assert isinstance(ignored, Ignored) and "own" in ignored.reason
    via_app = {**comment, "performed_via_github_app": {"id": 4242, "slug": "x"}}
    (ignored,) = translate("issue_comment", {**base, "comment": via_app}, app=APP, now=NOW)
    assert isinstance(ignored, Ignored)
    # Another App's bot is not Ballet: its commands count (and are judged later).
    other_bot = {**comment, "user": {"login": "renovate[bot]", "type": "Bot"}}
    (other,) = translate("issue_comment", {**base, "comment": other_bot}, app=APP, now=NOW)
    assert isinstance(other, IssueCommands) and other.author_is_bot


def test_a_bot_is_read_as_a_bot_unless_the_operator_trusts_it(webhooks_dir: Path) -> None:
    """Whatever it does (label, command, review), a Bot account or a `[bot]` login is
    a bot, unless BALLET_TRUSTED_BOTS lists it (casefolded, as settings keep it)."""
    label = _load(webhooks_dir, "issues/labeled.payload.json", label={"name": "ballet"})
    base = _load(webhooks_dir, "issue_comment/created.payload.json")
    comment = {**base["comment"], "body": "/ballet answer 42"}
    review = _load(webhooks_dir, "pull_request_review/submitted.payload.json")
    review["review"] = {**review["review"], "state": "APPROVED"}

    def bot_flags(account: dict[str, str], trusted: frozenset[str]) -> list[bool]:
        (start,) = translate(
            "issues", {**label, "sender": account}, app=APP, now=NOW, trusted_bots=trusted
        )
        by = {**base, "comment": {**comment, "user": account}}
        (said,) = translate("issue_comment", by, app=APP, now=NOW, trusted_bots=trusted)
        reviewed = {**review, "review": {**review["review"], "user": account}}
        (judged,) = translate(
            "pull_request_review", reviewed, app=APP, now=NOW, trusted_bots=trusted
        )
        assert isinstance(start, StartTicket) and isinstance(said, IssueCommands)
        assert isinstance(judged, ForTicket) and isinstance(judged.event, ReviewSubmitted)
        return [start.requested_by_is_bot, said.author_is_bot, judged.event.author_is_bot]

    renovate = {"login": "Renovate[bot]", "type": "Bot"}
    assert bot_flags(renovate, frozenset()) == [True, True, True]
    assert bot_flags(renovate, frozenset({"acme-ci[bot]"})) == [True, True, True]
    assert bot_flags(renovate, frozenset({"renovate[bot]"})) == [False, False, False]
    # A Bot account whatever its login, and a `[bot]` login whatever its type.
    assert bot_flags({"login": "sneaky", "type": "Bot"}, frozenset()) == [True, True, True]
    assert bot_flags({"login": "x[bot]", "type": "User"}, frozenset()) == [True, True, True]
    assert bot_flags({"login": "octocat", "type": "User"}, frozenset()) == [False, False, False]


def test_comment_on_a_pull_request_targets_the_pr(webhooks_dir: Path) -> None:
    base = _load(webhooks_dir, "issue_comment/created.payload.json")
    issue = {**base["issue"], "pull_request": {"url": "x"}}
    comment = {**base["comment"], "body": "/ballet approve"}
    (intent,) = translate(
        "issue_comment", {**base, "issue": issue, "comment": comment}, app=APP, now=NOW
    )
    assert isinstance(intent, IssueCommands) and intent.on_pr
    assert intent.target == TicketTarget(repo="Codertocat/Hello-World", pr=1)


def test_pull_request_events(webhooks_dir: Path) -> None:
    closed = _load(webhooks_dir, "pull_request/closed.payload.json")
    closed["pull_request"] = {**closed["pull_request"], "body": "Work for it.\n\nCloses #7"}
    (intent,) = translate("pull_request", closed, app=APP, now=NOW)
    assert intent == ForTicket(
        77,
        TicketTarget(repo="Codertocat/Hello-World", pr=2, branch="changes", linked_issue=7),
        PullRequestClosed(now=NOW, merged=False, by="Codertocat"),
    )
    pushed = _load(webhooks_dir, "pull_request/synchronize.payload.json")
    head, check = translate("pull_request", pushed, app=APP, now=NOW)
    assert isinstance(head, ForTicket) and isinstance(head.event, HeadPushed)
    assert head.event.sha == pushed["pull_request"]["head"]["sha"]
    assert check == ValidateConfigInPR(77, "Codertocat/Hello-World", 2, head.event.sha)
    (ready,) = translate(
        "pull_request",
        _load(webhooks_dir, "pull_request/ready_for_review.payload.json"),
        app=APP,
        now=NOW,
    )
    assert isinstance(ready, Ignored)


def test_review_and_checks(webhooks_dir: Path) -> None:
    review = _load(webhooks_dir, "pull_request_review/submitted.payload.json")
    review["review"] = {**review["review"], "state": "APPROVED"}
    (intent,) = translate("pull_request_review", review, app=APP, now=NOW)
    assert isinstance(intent, ForTicket) and isinstance(intent.event, ReviewSubmitted)
    assert intent.event.state == "approved" and intent.target.pr == 2

    suite = _load(webhooks_dir, "check_suite/completed.payload.json")
    (intent,) = translate("check_suite", suite, app=APP, now=NOW)
    assert isinstance(intent, ForTicket) and isinstance(intent.event, ChecksCompleted)
    assert intent.event.conclusion == "success" and intent.target.pr == 2
    own = {**suite, "check_suite": {**suite["check_suite"], "app": {"id": 4242}}}
    (ignored,) = translate("check_suite", own, app=APP, now=NOW)
    assert isinstance(ignored, Ignored)

    requested = _load(webhooks_dir, "check_suite/requested.payload.json")
    (intent,) = translate("check_suite", requested, app=APP, now=NOW)
    assert isinstance(intent, ForTicket) and isinstance(intent.event, ChecksStarted)
    assert intent.event.head_sha == requested["check_suite"]["head_sha"]
    created = _load(webhooks_dir, "check_run/created.payload.json")
    (intent,) = translate("check_run", created, app=APP, now=NOW)
    assert isinstance(intent, ForTicket) and isinstance(intent.event, ChecksStarted)

    status = _load(webhooks_dir, "status/payload.json", state="error")
    (intent,) = translate("status", status, app=APP, now=NOW)
    assert isinstance(intent, ForTicket) and isinstance(intent.event, ChecksCompleted)
    assert intent.event.conclusion == "failure" and intent.target.branch == "master"


def test_push_touching_config_on_default_branch(webhooks_dir: Path) -> None:
    push = _load(
        webhooks_dir,
        "push/payload.json",
        ref="refs/heads/master",
        after="c" * 40,
        commits=[{"added": [], "modified": [".ballet.yml"], "removed": []}],
    )
    repo = "Codertocat/Hello-World"
    assert translate("push", push, app=APP, now=NOW) == (
        ConfigChanged(77, repo, "c" * 40),
        BaseMoved(77, repo, "master", "c" * 40, (".ballet.yml",)),
    )
    push["commits"] = [{"added": ["README.md"], "modified": [], "removed": []}]
    assert translate("push", push, app=APP, now=NOW) == (
        BaseMoved(77, repo, "master", "c" * 40, ("README.md",)),
    )


def test_a_push_to_any_branch_moves_it_as_a_base_and_a_deletion_is_ignored(
    webhooks_dir: Path,
) -> None:
    push = _load(
        webhooks_dir,
        "push/payload.json",
        ref="refs/heads/release",
        after="d" * 40,
        commits=[{"added": ["a.py"], "modified": [".ballet.yml"], "removed": ["b.py"]}],
    )
    # Not the default branch: its .ballet.yml is nobody's configuration.
    assert translate("push", push, app=APP, now=NOW) == (
        BaseMoved(
            77, "Codertocat/Hello-World", "release", "d" * 40, (".ballet.yml", "a.py", "b.py")
        ),
    )
    push["after"] = "0" * 40
    (ignored,) = translate("push", push, app=APP, now=NOW)
    assert isinstance(ignored, Ignored)


@pytest.mark.parametrize(
    ("event", "name"),
    [("installation", "created.payload.json"), ("installation_repositories", "added.payload.json")],
)
def test_installation_bookkeeping(webhooks_dir: Path, event: str, name: str) -> None:
    payload = json.loads((webhooks_dir / event / name).read_text())
    (intent,) = translate(event, payload, app=APP, now=NOW)
    assert isinstance(intent, InstallationChanged) and intent.installation_id == 957387
    assert intent.added


def test_an_issue_edit_is_for_the_ticket_of_its_issue(webhooks_dir: Path) -> None:
    edit = _load(webhooks_dir, "issues/edited.payload.json", changes={"body": {"from": "old"}})
    (intent,) = translate("issues", edit, app=APP, now=NOW)
    assert isinstance(intent, ForTicket) and isinstance(intent.event, IssueEdited)
    assert intent.target == TicketTarget(repo="Codertocat/Hello-World", issue=1)
    event = intent.event
    assert (event.title, event.editor, event.editor_is_bot) == (
        "Spelling error in the README file",
        "Codertocat",
        False,
    )
    assert event.body == edit["issue"]["body"] and event.permission == "none"  # asked later
    bot = {**edit, "sender": {"login": "helper[bot]", "type": "Bot"}}
    (by_bot,) = translate("issues", bot, app=APP, now=NOW)
    assert isinstance(by_bot, ForTicket) and isinstance(by_bot.event, IssueEdited)
    assert by_bot.event.editor_is_bot
    # What cannot be a ticket's text changing is not looked up at all.
    unlabelled = {**edit, "issue": {**edit["issue"], "labels": []}}
    on_a_pr = {**edit, "issue": {**edit["issue"], "pull_request": {"url": "x"}}}
    state_only = {**edit, "changes": {"state": {"from": "open"}}}
    for payload in (unlabelled, on_a_pr, state_only):
        (ignored,) = translate("issues", payload, app=APP, now=NOW)
        assert isinstance(ignored, Ignored), payload
