"""The epic and lineage in the prompt: brief, since all of it is in BALLET_CONTEXT.

The prompt names the epic with its acceptance criteria and lists a few
siblings and linked items, one line each; the description and the rest are
left to `$BALLET_CONTEXT`, so a large epic never crowds out the ticket. An item
no writer wrote or named (`by_writer` False) is listed by number and state, its
title withheld and said to be (`core.lineage`).
"""

from __future__ import annotations

from ballet.core.lineage import Epic, LinkedItem, SubIssue, TicketLinks

PROMPT_SUB_ISSUES = 10
PROMPT_LINEAGE = 10
PROMPT_CRITERIA_CHARS = 1_500
RELATION_WORDS = {
    "referenced": "named by this ticket",
    "referencing": "names this ticket",
    "both": "named by and names this ticket",
}
# Why a title is not there, for the agent (and the person reading its prompt).
NOT_WRITTEN = "title withheld: not written by a writer"
NOT_NAMED = "title withheld: not written or named by a writer"


def links_section(links: TicketLinks) -> str:
    parts = []
    if links.epic is not None:
        parts.append(_epic(links.epic))
    if links.lineage:
        lines = [_linked(i) for i in links.lineage[:PROMPT_LINEAGE]]
        more = len(links.lineage) - PROMPT_LINEAGE + links.lineage_left_out
        if more > 0:
            lines.append(f"- … and {more} more in $BALLET_CONTEXT")
        parts.append("## Linked issues and pull requests\n\n" + "\n".join(lines))
    return "\n\n".join(parts)


def _epic(epic: Epic) -> str:
    done = sum(1 for s in epic.sub_issues if s.state == "closed")
    if epic.by_writer:
        head = f"## Epic: {epic.title}"
        where = "Its description is in $BALLET_CONTEXT (`epic.body`)."
    else:
        head = f"## Epic: {epic.repo}#{epic.number} (title and description withheld"
        head += ": not written by a writer)"
        where = "Its text is not given: no writer wrote it."
    text = (
        f"{head}\n\nThis ticket is one of {epic.sub_issues_total} sub-issues "
        f"of {epic.url} ({epic.state}). {where}"
    )
    if epic.acceptance_criteria:
        criteria = epic.acceptance_criteria
        if len(criteria) > PROMPT_CRITERIA_CHARS:
            criteria = criteria[:PROMPT_CRITERIA_CHARS] + "\n[… the rest in $BALLET_CONTEXT]"
        text += f"\n\nThe epic's acceptance criteria:\n\n{criteria}"
    if epic.sub_issues:
        lines = [_sibling(s) for s in epic.sub_issues[:PROMPT_SUB_ISSUES]]
        more = len(epic.sub_issues) - PROMPT_SUB_ISSUES + epic.sub_issues_left_out
        if more > 0:
            lines.append(f"- … and {more} more in $BALLET_CONTEXT")
        listed = "\n".join(lines)
        text += f"\n\nThe other sub-issues ({done} of those listed closed):\n\n{listed}"
    return text


def _sibling(sub: SubIssue) -> str:
    if sub.by_writer:
        line = f"- #{sub.number} {sub.title} ({sub.state})"
    else:
        line = f"- #{sub.number} ({NOT_WRITTEN}; {sub.state})"
    if sub.ballet is not None:
        pr = f", PR #{sub.ballet.pr_number}" if sub.ballet.pr_number else ""
        line += f" — Ballet: {sub.ballet.status}{pr}"
    return line


def _linked(item: LinkedItem) -> str:
    kind = "PR" if item.kind == "pull_request" else "issue"
    where = f"{item.repo}#{item.number}"
    relation = RELATION_WORDS[item.relation]
    if not item.by_writer:
        return f"- {kind} {where} ({NOT_NAMED}; {item.state}; {relation})"
    return f"- {kind} {where} {item.title} ({item.state}; {relation})"
