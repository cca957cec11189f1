"""Every text from GitHub in a runner's spec is cleaned once, and the session is told what went.

The spec carries hidden text in each place a session reads people's words:
the ticket, its epic and linked items, a return's reason, review and checks,
answers and earlier reports. None of it reaches the prompt or the context;
what people see (a code block's comment among it) does, and so does the note.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from ballet.core.lineage import Epic, LinkedItem, SubIssue, TicketLinks
from ballet.core.report import Handoff, Question, Report
from ballet.sessions import Answer, EarlierReport
from ballet.sessions.context import build_context
from ballet.sessions.prompt import render_prompt
from ballet.sessions.returns import (
    AnnotationInfo,
    CheckInfo,
    ReturnInfo,
    ReviewCommentInfo,
    ReviewInfo,
)
from ballet.sessions.untrusted import without_hidden_text
from session_helpers import MakeSpec

NOW = datetime(2026, 12, 7, tzinfo=UTC)
CODE = "```\n<!-- kept: code shows it -->\n```"


def hidden(n: int) -> str:
    """A visible word with hidden text of each kind around it, all marked SECRET-n."""
    return (
        f"word{n}<!-- SECRET-{n}a --> ![SECRET-{n}b](https://x/{n}.png) "
        f'[link](https://y/{n} "SECRET-{n}c") <span title="SECRET-{n}d">seen{n}</span>'
        f"\u200b\U000e0053"
    )


def line(n: int) -> str:
    return f"title{n}\u202e\u200b"


def item(n: int) -> dict[str, object]:
    return {
        "repo": "octo/demo",
        "number": n,
        "title": line(n),
        "state": "open",
        "url": f"https://github.com/octo/demo/issues/{n}",
    }


def test_every_text_from_github_reaches_the_session_without_what_was_hidden(
    make_spec: MakeSpec,
) -> None:
    ticket = make_spec().ticket.model_copy(
        update={"title": line(1), "body": f"{hidden(1)}\n\n{CODE}\n"}
    )
    epic = Epic(
        **item(2),
        body=hidden(2),
        acceptance_criteria=hidden(3),
        sub_issues=(SubIssue(**item(4)),),
    )
    links = TicketLinks(epic=epic, lineage=(LinkedItem(**item(5), relation="referenced"),))
    review = ReviewInfo(
        author="octocat",
        state="CHANGES_REQUESTED",
        body=hidden(6),
        comments=(
            ReviewCommentInfo(path="a.py", line=1, body=hidden(7), diff_hunk="@@ <!-- code -->"),
        ),
    )
    check = CheckInfo(
        name="ci",
        kind="check_run",
        conclusion="failure",
        title=line(8),
        summary=hidden(9),
        annotations=(
            AnnotationInfo(
                path="a.py", start_line=1, end_line=1, level="failure", message=line(10)
            ),
        ),
    )
    returned = (
        ReturnInfo(kind="rejected", stage="approval", by="carol", text=hidden(11), at=NOW),
        ReturnInfo(
            kind="changes_requested", stage="approval", at=NOW, review=review, checks=(check,)
        ),
    )
    report = Report(
        outcome="done",
        summary=hidden(12),
        details=hidden(13),
        decisions=(hidden(14),),
        questions=(Question(text=hidden(15)),),
    )
    earlier = EarlierReport(
        stage="implement", iteration=1, report=report, handoff=Handoff(summary=hidden(16))
    )
    spec = make_spec(
        ticket=ticket,
        links=links,
        returned=returned,
        answers=(Answer(question=hidden(17), answer=hidden(18), author="carol"),),
        earlier_reports=(earlier,),
    )

    cleaned = without_hidden_text(spec)

    prompt = render_prompt(cleaned, report_path=Path("/s/report.json"), handoff_path=None)
    context = json.dumps(build_context(cleaned), ensure_ascii=False)
    for given in (prompt, context, cleaned.model_dump_json()):
        assert "SECRET" not in given
        assert not {"\u200b", "\u202e", "\U000e0053"} & set(given)
        assert "<!-- kept: code shows it -->" in given
    for n in (1, 6, 7, 11, 18):  # what people see stays
        assert f"word{n}" in prompt and f"seen{n}" in prompt
    for n in range(2, 19):
        assert f"word{n}" in context or f"title{n}" in context, n
    assert cleaned.returned[1].review is not None
    assert cleaned.returned[1].review.comments[0].diff_hunk == "@@ <!-- code -->"  # the code's
    assert cleaned.hidden_text == (
        "2 invisible characters removed from the issue title",
        "1 HTML comment, 2 invisible characters, 1 image alt text, 1 link title and "
        "1 HTML attribute removed from the issue body",
        "1 HTML comment, 6 invisible characters, 1 image alt text, 1 link title and "
        "1 HTML attribute removed from the epic",
        "2 invisible characters removed from the linked items' titles",
        "4 HTML comments, 12 invisible characters, 4 image alt texts, 4 link titles and "
        "4 HTML attributes removed from why the ticket came back",
        "2 HTML comments, 4 invisible characters, 2 image alt texts, 2 link titles and "
        "2 HTML attributes removed from the answers",
        "5 HTML comments, 10 invisible characters, 5 image alt texts, 5 link titles and "
        "5 HTML attributes removed from the earlier reports",
    )
    assert "## Hidden text removed" in prompt
    assert "- 2 invisible characters removed from the issue title." in prompt
    assert json.loads(context)["hidden_text_removed"] == list(cleaned.hidden_text)


def test_a_spec_with_nothing_hidden_is_given_as_it_was(make_spec: MakeSpec) -> None:
    spec = make_spec()
    cleaned = without_hidden_text(spec)
    assert cleaned == spec and cleaned.hidden_text == ()
    prompt = render_prompt(cleaned, report_path=Path("/s/report.json"), handoff_path=None)
    assert "Hidden text removed" not in prompt
    assert build_context(cleaned)["hidden_text_removed"] == []
