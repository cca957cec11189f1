"""BALLET_PROMPT: the rendered prompt an LLM runtime is given.

BALLET_PROMPT holds the *path* of `prompt.md` (next to the report, outside the
clone); LLM adapters also pass its text on their CLI's command line. The
prompt has: the role's instructions, the stage's skills, the ticket and its
acceptance criteria, its epic and linked items (briefly), earlier reports
(oldest first), answers, the previous phase's handoff, what this phase is for,
and the report contract with the exact path to write to.
"""

from __future__ import annotations

import json
from pathlib import Path

from ballet.core.outcomes import UNKNOWN_OUTCOME
from ballet.core.text import acceptance_criteria
from ballet.sessions.context import ticket_links, visible_reports
from ballet.sessions.links_prompt import links_section
from ballet.sessions.returns import returned_section, signoffs_section
from ballet.sessions.spec import EarlierReport, RunnerSpec
from ballet.sessions.untrusted import hidden_text_section

# Long texts are cut so the prompt stays well under a command line's limits
# (Linux refuses a single argument over 128 KiB, and CLIs take the prompt as one).
MAX_BODY_CHARS = 20_000
MAX_SUMMARY_CHARS = 4_000
MAX_DETAILS_CHARS = 4_000
MAX_REPORTS_CHARS = 40_000

PHASE_GOALS = {
    "research": "Research only: read the code and the ticket, find what must change and "
    "why. Do not change files.",
    "plan": "Plan only: turn the research into concrete steps (files, functions, tests). "
    "Do not change files.",
    "implement": "Implement the plan: change the code, add tests, commit.",
    "verify": "Verify the work: run the tests and checks, fix what fails, commit.",
}

REPORT_EXAMPLE = {
    "outcome": "done",
    "summary": "markdown: what you did, in a few lines",
    "details": "markdown",
    "decisions": [],
    "constraints": [],
    "open_questions": [],
    "questions": [{"text": "…", "blocking": True}],
}
HANDOFF_EXAMPLE = {"summary": "…", "decisions": [], "constraints": [], "open_questions": []}


def companions_section(spec: RunnerSpec) -> str:
    """The ticket's other repositories: where they are, and that each change is
    committed where it belongs (docs/session-contract.md)."""
    repos = ", ".join(f"`{c.repo}` (base `{c.base}`)" for c in spec.companions)
    return (
        f"## The ticket's other repositories\n\nThis ticket may change {repos} too, "
        "listed in the order their pull requests land (dependencies first). Each is "
        "cloned beside your working directory on the same branch; the file named by "
        "`$BALLET_COMPANIONS` lists them, one `owner/name=path` a line. Commit each change "
        "in the repository it belongs to: Ballet pushes every one whose branch moved and "
        "opens its pull request. The ticket's whole change is every repository's diff "
        "against its base: `git -C <path> diff origin/<base>...HEAD` in each." + _integrating(spec)
    )


def _integrating(spec: RunnerSpec) -> str:
    """An integrator brings every repository's branch up to date, not only the ticket's."""
    if spec.update_with is None:
        return ""
    merge = spec.update_with == "merge"
    how = "merge `origin/<base>` into it" if merge else "rebase it on `origin/<base>`"
    return (
        f" Bring each one's branch up to date with its base as you do this one's: {how} "
        "(`git -C <path> ...`), resolve its conflicts keeping both intents, and commit there; "
        "a repository already up to date needs nothing."
    )


def render_prompt(
    spec: RunnerSpec,
    *,
    report_path: Path,
    handoff_path: Path | None,
    report_in_reply: bool = False,
) -> str:
    ticket = spec.ticket
    parts = [f"# Ballet session: {spec.stage.id} for {ticket.ref}"]
    if spec.stage.instructions:
        parts.append(f"## Your role\n\n{spec.stage.instructions}")
    for name in spec.stage.skills:
        text = spec.skill_texts.get(name)
        if text:
            parts.append(f"## Skill: {name}\n\n{text.strip()}")
    body = _cut(ticket.body, MAX_BODY_CHARS) or "(no description)"
    parts.append(
        f"## Ticket: {ticket.title}\n\n{ticket.url} by @{ticket.author}"
        + (f", labels: {', '.join(ticket.labels)}" if ticket.labels else "")
        + f"\n\n{body}"
    )
    if ticket.text_change:
        parts.append(
            f"## The ticket's text changed\n\n{ticket.text_change} The title and body above "
            "are the new text; earlier reports were written against the old one."
        )
    hidden = hidden_text_section(spec.hidden_text)
    if hidden:
        parts.append(hidden)
    criteria = acceptance_criteria(ticket.body)
    if criteria:
        parts.append(f"## Acceptance criteria\n\n{criteria}")
    links = links_section(ticket_links(spec))
    if links:
        parts.append(links)
    where = f"You work on branch `{spec.branch}`" if spec.branch else "You work on"
    parts.append(
        f"## Where\n\n{where} (base `{spec.base}`), iteration {spec.iteration}"
        + (f", pull request #{spec.pr_number}" if spec.pr_number else "")
        + ". Commit your work with git; do not push: Ballet pushes the branch after "
        "the session. Only this branch is pushed."
    )
    if spec.companions:
        parts.append(companions_section(spec))
    returned = returned_section(spec.returned)
    if returned:
        parts.append(returned)
    reports = _earlier_reports(visible_reports(spec))
    if reports:
        parts.append(reports)
    if spec.answers:
        answers = "\n".join(
            f"- Q: {a.question}\n  A{f' (@{a.author})' if a.author else ''}: {a.answer}"
            for a in spec.answers
        )
        parts.append(f"## Answers to questions\n\n{answers}")
    signoffs = signoffs_section(spec.signoffs)
    if signoffs:
        parts.append(signoffs)
    if spec.handoff:
        handoff = json.dumps(spec.handoff.model_dump(mode="json"), indent=2)
        parts.append(f"## Handoff from the previous phase\n\n```json\n{handoff}\n```")
    if spec.phase:
        parts.append(f"## This phase: {spec.phase}\n\n{PHASE_GOALS[spec.phase]}")
    outcomes = spec.stage.outcomes
    parts.append(_contract(report_path, handoff_path, outcomes, report_in_reply))
    return "\n\n".join(parts) + "\n"


def _earlier_reports(reports: tuple[EarlierReport, ...]) -> str:
    """The newest reports that fit the budget, shown oldest first; the rest are counted."""
    kept: list[str] = []
    used = 0
    for earlier in reversed(reports):
        r = earlier.report
        phase = f", {earlier.phase}" if earlier.phase else ""
        text = (
            f"### {earlier.stage} (iteration {earlier.iteration}{phase}): {r.outcome}\n\n"
            f"{_cut(r.summary, MAX_SUMMARY_CHARS)}\n\n{_cut(r.details, MAX_DETAILS_CHARS)}"
        ).rstrip()
        if kept and used + len(text) > MAX_REPORTS_CHARS:
            break
        kept.append(text)
        used += len(text)
    if not kept:
        return ""
    omitted = len(reports) - len(kept)
    head = "## Earlier reports (oldest first)"
    if omitted:
        head += f"\n\n{omitted} older report(s) left out here; all are in $BALLET_CONTEXT."
    return "\n\n".join([head, *reversed(kept)])


def _contract(
    report_path: Path, handoff_path: Path | None, outcomes: dict[str, str], report_in_reply: bool
) -> str:
    # The example's outcome is one this session may report: an example's word is copied.
    example = json.dumps({**REPORT_EXAMPLE, "outcome": next(iter(outcomes), "done")}, indent=2)
    if report_in_reply:
        # Aider edits files only inside the repository and runs no shell commands:
        # Ballet takes the report from the reply and writes it to BALLET_REPORT itself.
        text = (
            "## When you finish: give your report\n\n"
            "End your last reply with your report as JSON on one single line, not in a "
            "code block; Ballet reads the last such line of your reply and writes it to "
            f"`{report_path}` (also in $BALLET_REPORT). Do not create that file yourself. "
            "Only `outcome` and `summary` are required. Without the report the session "
            "counts as failed. Its shape:\n\n"
            f"```json\n{example}\n```\n"
        )
    else:
        text = (
            "## When you finish: write your report\n\n"
            f"Write this JSON to `{report_path}` (also in $BALLET_REPORT). Only `outcome` "
            "and `summary` are required. Without this file the session counts as failed.\n\n"
            f"```json\n{example}\n```\n"
        )
    if outcomes:
        text += f"\n{outcomes_section(outcomes)}\n"
    text += (
        "\nUse a question with `blocking: true` only when a person must decide before the "
        "work can go on."
    )
    if handoff_path:
        text += (
            f"\n\nAlso write the handoff for the next phase to `{handoff_path}` (also in "
            "$BALLET_HANDOFF): it is all the next phase will know of yours.\n\n"
            f"```json\n{json.dumps(HANDOFF_EXAMPLE, indent=2)}\n```"
        )
    return text


def outcomes_section(outcomes: dict[str, str]) -> str:
    lines = "\n".join(f"- `{outcome}`: {does}" for outcome, does in outcomes.items())
    return f"Your `outcome` is one of these, exactly as written:\n\n{lines}\n\n{UNKNOWN_OUTCOME}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n\n[… cut at {limit} characters]"
