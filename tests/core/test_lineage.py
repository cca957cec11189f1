"""Epic and lineage, chosen and bounded by the pure core."""

from __future__ import annotations

from ballet.core.lineage import (
    MAX_EPIC_BODY_CHARS,
    MAX_LINEAGE,
    MAX_SUB_ISSUES,
    MAX_TITLE_CHARS,
    BalletRun,
    Item,
    build_epic,
    build_lineage,
    references,
    run_from_labels,
    ticket_references,
)
from ballet.core.text import acceptance_criteria

REPO = "octo/app"


def item(number: int, repo: str = REPO, **kw: object) -> Item:
    fields: dict[str, object] = {
        "repo": repo,
        "number": number,
        "title": f"Item {number}",
        "state": "open",
        "url": f"https://github.com/{repo}/issues/{number}",
    }
    fields.update(kw)
    return Item.model_validate(fields)


def test_references_in_every_form_github_links() -> None:
    text = (
        "Follows #12 and other/lib#3, see https://github.com/octo/app/pull/40 and "
        "https://github.com/Other/Lib/issues/3.\nAgain #12."
    )
    assert references(text, REPO) == [("octo/app", 12), ("other/lib", 3), ("octo/app", 40)]


def test_references_skip_code_anchors_and_words() -> None:
    text = (
        "Color `#123` and a#5 and &#38; and /path#7 and ##8 and #0.\n"
        "```\nfixes #99\n```\n"
        "A [link](https://example.com/page#section-2) and issue #6."
    )
    assert references(text, REPO) == [("octo/app", 6)]


def test_ticket_references_leave_out_the_ticket_and_ballets_own_comments() -> None:
    found = ticket_references(
        (REPO, 7),
        "Part of #1; this is #7.",
        ["Blocked by #2 and #1", "<!-- ballet:marker octo/app#7:tracking::0:0 --> PR #8"],
    )
    assert found == [("octo/app", 1), ("octo/app", 2)]


def test_ballet_labels_tell_the_outcome_of_a_sibling() -> None:
    assert run_from_labels(["bug", "ballet:done"]) == BalletRun(status="done")
    assert run_from_labels(["ballet:running"]) == BalletRun(status="running")
    assert run_from_labels(["ballet:failed", "ballet:waiting"]) == BalletRun(status="failed")
    assert run_from_labels(["ballet"]) is None


def test_the_epic_lists_the_other_sub_issues_with_ballets_runs() -> None:
    body = "# Epic\n\nShip it.\n\n## Acceptance criteria\n\n- [ ] all parts merged\n"
    subs = [item(2, state="closed"), item(7), item(3)]
    runs = {("octo/app", 2): BalletRun(status="done", pr_number=9, pr_url="u")}
    epic = build_epic(item(1, title="The epic"), body, subs, ("Octo/App", 7), runs)
    assert epic.title == "The epic" and epic.body == body and not epic.body_cut
    assert epic.acceptance_criteria == "- [ ] all parts merged"
    assert [(s.number, s.state) for s in epic.sub_issues] == [(2, "closed"), (3, "open")]
    assert epic.sub_issues[0].ballet == runs[("octo/app", 2)]
    assert epic.sub_issues[1].ballet is None
    assert (epic.sub_issues_total, epic.sub_issues_left_out) == (3, 0)


def test_a_huge_epic_is_summarised_not_inlined() -> None:
    body = "x" * (MAX_EPIC_BODY_CHARS * 3)
    subs = [item(n, title="t" * 1000) for n in range(2, MAX_SUB_ISSUES + 12)]
    epic = build_epic(item(1), body, subs, (REPO, 999), {})
    assert epic.body_cut and len(epic.body) < MAX_EPIC_BODY_CHARS + 100
    assert epic.body.endswith(f"[… cut at {MAX_EPIC_BODY_CHARS} of {len(body)} characters]")
    assert len(epic.sub_issues) == MAX_SUB_ISSUES
    assert epic.sub_issues_left_out == 10 and epic.sub_issues_total == MAX_SUB_ISSUES + 10
    assert all(len(s.title) < MAX_TITLE_CHARS + 60 for s in epic.sub_issues)
    assert epic.acceptance_criteria is None


def test_lineage_names_the_direction_and_skips_what_is_shown_elsewhere() -> None:
    referenced = [item(4), item(5, kind="pull_request", state="merged"), item(1)]
    referencing = [item(5, kind="pull_request", state="merged"), item(6), item(3, "other/lib")]
    lineage, left_out = build_lineage(referenced, referencing, [("OCTO/app", 1)])
    assert [(i.repo, i.number, i.relation) for i in lineage] == [
        ("octo/app", 4, "referenced"),
        ("octo/app", 5, "both"),
        ("octo/app", 6, "referencing"),
        ("other/lib", 3, "referencing"),
    ]
    assert lineage[1].kind == "pull_request" and lineage[1].state == "merged"
    assert left_out == 0


def test_lineage_is_bounded() -> None:
    many = [item(n) for n in range(1, MAX_LINEAGE + 6)]
    lineage, left_out = build_lineage(many, [], [])
    assert len(lineage) == MAX_LINEAGE and left_out == 5


def test_acceptance_criteria_from_a_section_or_a_checklist() -> None:
    assert acceptance_criteria("## Acceptance criteria\n\n- works\n## Notes\nno") == "- works"
    assert acceptance_criteria("**Acceptance criteria:**\n\n") is None
    assert acceptance_criteria("Do it\n- [x] one\n* [ ] two") == "- [x] one\n* [ ] two"
