"""The epic and lineage as a session sees them: whole (bounded) in BALLET_CONTEXT,
briefly in the prompt, and without the ticket's own pull request."""

from __future__ import annotations

import json
from pathlib import Path

from ballet.core.lineage import BalletRun, Epic, LinkedItem, SubIssue, TicketLinks
from ballet.sessions.context import build_context
from ballet.sessions.prompt import render_prompt
from session_helpers import MakeSpec

URL = "https://github.com/octo/demo"


def sub(number: int, **kw: object) -> SubIssue:
    fields: dict[str, object] = {
        "repo": "octo/demo",
        "number": number,
        "title": f"Part {number}",
        "state": "open",
        "url": f"{URL}/issues/{number}",
        "by_writer": True,
    }
    fields.update(kw)
    return SubIssue.model_validate(fields)


def linked(number: int, relation: str, kind: str = "issue", by_writer: bool = True) -> LinkedItem:
    return LinkedItem.model_validate(
        {
            "repo": "octo/demo",
            "number": number,
            "kind": kind,
            "title": f"Linked {number}" if by_writer else "",
            "state": "open",
            "url": f"{URL}/issues/{number}",
            "relation": relation,
            "by_writer": by_writer,
        }
    )


EPIC = Epic(
    repo="octo/demo",
    number=1,
    title="Calculator epic",
    state="open",
    url=f"{URL}/issues/1",
    body="EPIC-BODY-TEXT",
    by_writer=True,
    acceptance_criteria="- every operation",
    sub_issues=(
        sub(2, state="closed", ballet=BalletRun(status="done", pr_number=12, pr_url="u")),
        *(sub(n) for n in range(3, 16)),
    ),
    sub_issues_total=15,
    sub_issues_left_out=2,
)


def test_the_context_holds_the_epic_and_the_lineage(make_spec: MakeSpec) -> None:
    links = TicketLinks(
        epic=EPIC,
        lineage=(linked(30, "referenced"), linked(43, "referencing", "pull_request")),
        lineage_left_out=3,
    )
    spec = make_spec(links=links, pr_number=43)
    context = json.loads(json.dumps(build_context(spec)))
    assert context["epic"]["title"] == "Calculator epic"
    assert context["epic"]["body"] == "EPIC-BODY-TEXT"
    assert context["epic"]["acceptance_criteria"] == "- every operation"
    first = context["epic"]["sub_issues"][0]
    assert (first["number"], first["state"], first["ballet"]["status"]) == (2, "closed", "done")
    assert first["ballet"]["pr_number"] == 12
    assert context["epic"]["sub_issues_left_out"] == 2
    # The ticket's own pull request names the ticket, but it is `pr_number`, not lineage.
    assert [(i["number"], i["relation"]) for i in context["lineage"]] == [(30, "referenced")]
    assert context["lineage_left_out"] == 3


def test_a_ticket_without_links_says_so(make_spec: MakeSpec) -> None:
    context = build_context(make_spec())
    assert context["epic"] is None and context["lineage"] == []
    prompt = render_prompt(make_spec(), report_path=Path("/r"), handoff_path=None)
    assert "## Epic" not in prompt and "## Linked" not in prompt


def test_the_prompt_is_brief_about_them(make_spec: MakeSpec) -> None:
    many = tuple(linked(n, "referencing") for n in range(40, 52))
    spec = make_spec(links=TicketLinks(epic=EPIC, lineage=many, lineage_left_out=1))
    prompt = render_prompt(spec, report_path=Path("/r"), handoff_path=None)
    assert "## Epic: Calculator epic" in prompt
    assert "one of 15 sub-issues of https://github.com/octo/demo/issues/1" in prompt
    assert "- every operation" in prompt
    assert "EPIC-BODY-TEXT" not in prompt  # the description stays in the context
    assert "- #2 Part 2 (closed) — Ballet: done, PR #12" in prompt
    assert "- #11 Part 11 (open)" in prompt and "#12 Part 12" not in prompt
    assert "- … and 6 more in $BALLET_CONTEXT" in prompt  # 4 past the prompt, 2 left out
    assert "- issue octo/demo#40 Linked 40 (open; names this ticket)" in prompt
    assert "octo/demo#50" not in prompt
    assert "- … and 3 more in $BALLET_CONTEXT" in prompt


def test_what_no_writer_wrote_or_named_is_listed_by_number_and_said_to_be(
    make_spec: MakeSpec,
) -> None:
    epic = Epic(
        repo="octo/demo",
        number=1,
        title="",
        state="open",
        url=f"{URL}/issues/1",
        body="",
        sub_issues=(sub(2, title="", by_writer=False), sub(3)),
        sub_issues_total=3,
    )
    lineage = (linked(30, "referenced", by_writer=False), linked(31, "both"))
    spec = make_spec(links=TicketLinks(epic=epic, lineage=lineage))
    prompt = render_prompt(spec, report_path=Path("/r"), handoff_path=None)
    assert (
        "## Epic: octo/demo#1 (title and description withheld: not written by a writer)" in prompt
    )
    assert "acceptance criteria" not in prompt and "(`epic.body`)" not in prompt
    assert "- #2 (title withheld: not written by a writer; open)" in prompt
    assert "- #3 Part 3 (open)" in prompt
    assert (
        "- issue octo/demo#30 (title withheld: not written or named by a writer; open; "
        "named by this ticket)"
    ) in prompt
    assert "- issue octo/demo#31 Linked 31 (open; named by and names this ticket)" in prompt
    context = json.loads(json.dumps(build_context(spec)))
    assert [(i["number"], i["title"], i["by_writer"]) for i in context["lineage"]] == [
        (30, "", False),
        (31, "Linked 31", True),
    ]
    assert (context["epic"]["title"], context["epic"]["by_writer"]) == ("", False)
