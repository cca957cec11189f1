"""Comment bodies, rendered from the record: the tracking comment, stage
reports, questions and replies. Pure text in, text out.

User-controlled text (titles, summaries, reasons) is escaped for where it
lands: a Markdown table cell, a Mermaid label, or near a hidden HTML comment
(`-->` in a title must never end Ballet's state block early).
"""

from __future__ import annotations

import re
from datetime import datetime

from ballet.core.companion_text import companions_line
from ballet.core.durations import spoken
from ballet.core.limits import COMMENT_MAX, clip
from ballet.core.record import Record, StageRun, encode_record
from ballet.core.report import Handoff, Report
from ballet.core.report_block import ReportBlock, artifact_stage, encode_block
from ballet.core.returns import describe
from ballet.core.spend import Spend

_STATUS_WORDS = {
    "running": "🏃 running",
    "waiting": "⏳ waiting",
    "done": "✅ done",
    "failed": "❌ failed",
    "cancelled": "🚫 cancelled",
    "paused": "⏸️ paused",
}


def marker_for(key: str) -> str:
    return f"<!-- ballet:marker {key.replace(' ', '_').replace('>', '_')} -->"


def with_marker(body: str, key: str) -> str:
    # GitHub refuses a comment over its limit, and a refused comment is a lost one.
    # A tracking comment is cut before its state block, which must survive whole.
    if len(body) > COMMENT_MAX:
        text_part, block, state = body.rpartition(STATE_BLOCK_START)
        if block:
            body = clip(text_part, COMMENT_MAX - len(block + state)) + block + state
        else:
            body = clip(body, COMMENT_MAX)
    return f"{marker_for(key)}\n{body}"


STATE_BLOCK_START = "<!-- ballet:state "


def text(value: str) -> str:
    """Text that cannot open or close an HTML comment or start a mention storm."""
    return value.replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def cell(value: str) -> str:
    """One Markdown table cell: no pipes, no newlines."""
    return text(" ".join(value.split())).replace("|", "\\|")


def mermaid_label(value: str) -> str:
    # Mermaid labels are quoted; quotes and brackets inside would end them.
    cleaned = re.sub(r"[\"\[\]{}()<>|`#;]", " ", value)
    return " ".join(cleaned.split())[:60] or "stage"


def duration(start: datetime, end: datetime | None) -> str:
    if end is None:
        return "…"
    return spoken((end - start).total_seconds())


def flowchart(rec: Record) -> str:
    lines = ["```mermaid", "flowchart LR"]
    ids = {s.id: f"s{i}" for i, s in enumerate(rec.pipeline.stages)}
    terminal = {"$done": "done", "$failed": "failed", "$question": "question"}
    for stage in rec.pipeline.stages:
        lines.append(f'  {ids[stage.id]}["{mermaid_label(stage.name)}"]')
    for name in terminal.values():
        lines.append(f"  {name}(({name}))")
    for stage in rec.pipeline.stages:
        named = {t for outcome, t in stage.next.items() if outcome != "done"}
        for outcome, target in stage.next.items():
            if outcome == "done" and target in named:
                continue  # the implicit default repeats an arrow already drawn
            dest = terminal.get(target) or ids.get(target, "question")
            lines.append(f'  {ids[stage.id]} -- "{mermaid_label(outcome)}" --> {dest}')
    lines.append("  classDef current fill:#ffd33d,stroke:#b08800,stroke-width:3px")
    if rec.stage in ids:
        lines.append(f"  class {ids[rec.stage]} current")
    lines.append("```")
    return "\n".join(lines)


# The core never learns comment ids: it names a report by its marker key and
# the edge, which remembers which comment holds each marker, turns
# `(ballet-report:<key>)` into a link to that comment when it writes the body.
REPORT_LINK_SCHEME = "ballet-report:"


def report_link(key: str) -> str:
    return f"[report]({REPORT_LINK_SCHEME}{key.replace(' ', '_').replace(')', '_')})"


def runs_table(rec: Record) -> str:
    if not rec.history:
        return "_No stage has run yet._"
    rows = [
        "| Stage | Iteration | Attempt | Outcome | Duration | Report |",
        "|---|---|---|---|---|---|",
    ]
    for run in rec.history:
        name = run.stage + (f" · {run.phase}" if run.phase else "")
        name += f" · sign-off {run.role}" if run.role else ""
        report = report_link(run.report_ref) if run.report_ref else ""
        rows.append(
            f"| {cell(name)} | {run.iteration} | {run.attempt} | {cell(run.outcome or '…')} "
            f"| {duration(run.start, run.end)} | {report} |"
        )
    return "\n".join(rows)


def waiting_line(rec: Record) -> str:
    if rec.status == "paused":
        return "**Paused.** `/ballet resume` carries on."
    w = rec.waiting
    if w is None:
        return ""
    if w.kind in ("checks", "merge_result", "merge_queue", "auto_merge"):
        # The forge acts here, not a person; say so rather than name someone.
        return f"**Waiting for** {text(w.reason)} (no one needs to act; `/ballet retry` asks again)"
    who = ", ".join(f"@{login}" for login in w.who) or "anyone with write permission"
    act = f" — `{w.command}`" if w.command else ""
    return f"**Waiting for** {text(w.reason)} (who can act: {who}){act}"


def tracking(rec: Record) -> str:
    return f"{tracking_text(rec)}\n\n{encode_record(rec)}"


def tracking_text(rec: Record) -> str:
    """What people see of the tracking comment: everything but the state block."""
    t = rec.ticket
    parts = [
        f"### Ballet · {text(t.repo)}#{t.number}: {cell(t.title)}",
        f"**Status:** {_STATUS_WORDS[rec.status]} · stage `{rec.stage or '-'}` · iteration "
        f"{rec.iteration}/{rec.pipeline.iteration_limit} · pipeline `{rec.pipeline.name}` "
        + (f"({cell(rec.pipeline.title)}) " if rec.pipeline.title else "")
        + f"v{rec.pipeline.version}",
        waiting_line(rec),
        worker_line(rec),
        returned_line(rec),
        signoffs_line(rec),
        text(companions_line(rec)),  # a red check's name is anyone's text
        flowchart(rec),
        runs_table(rec),
    ]
    return "\n\n".join(p for p in parts if p)


def worker_line(rec: Record) -> str:
    """A running session that no worker has taken: which pool it waits for."""
    run = rec.open_run
    if rec.status != "running" or run is None or run.awaits_pool is None:
        return ""
    pool = text(run.awaits_pool)
    return (
        f"**Waiting for a worker** of pool `{pool}`: none is running, so the "
        f"`{text(run.stage)}` session stays queued until one starts (`ballet worker --pool "
        f"{pool}`); past the stage's timeout Ballet asks a person."
    )


def returned_line(rec: Record) -> str:
    """Why the ticket came back, and reviews that will send it back: people see
    what the next session is told."""
    lines = []
    if rec.pending_reviews:
        who = ", ".join(f"@{c.by}" for c in rec.pending_reviews)
        lines.append(
            f"**Changes requested** by {text(who)}: the ticket returns to rework when "
            "what runs now ends."
        )
    if rec.returned and rec.status in ("running", "waiting", "paused"):
        said = "; ".join(describe(c) for c in rec.returned)
        lines.append(f"**Came back in iteration {rec.iteration}:** {text(said)}.")
    return "\n\n".join(lines)


def signoffs_line(rec: Record) -> str:
    if not rec.signoffs_required:
        return ""
    given = {s.role for s in rec.signoffs_given}
    marks = [f"{r} {'✅' if r in given else '⏳'}" for r in rec.signoffs_required]
    return "**Sign-offs:** " + ", ".join(marks)


def pointer(rec: Record) -> str:
    return f"Ballet tracks this ticket on #{rec.pr_number}."


def report(
    run: StageRun, rep: Report, handoff: Handoff | None, next_step: str, ticket_spend: str = ""
) -> str:
    title = run.stage + (f" · {run.phase}" if run.phase else "")
    title += f" · sign-off {run.role}" if run.role else ""
    parts = [
        f"### {text(title)} — `{cell(rep.outcome)}` (iteration {run.iteration}, "
        f"attempt {run.attempt})",
        text(rep.summary),
        _bullets("Decisions", rep.decisions),
        _bullets("Constraints", rep.constraints),
        _bullets("Open questions", rep.open_questions + tuple(q.text for q in rep.questions)),
        spend_line(run.spend) if run.spend is not None else usage_line(rep),
        ticket_spend,
        _details("Details", text(rep.details)) if rep.details else "",
        _details("Handoff", _handoff(handoff)) if handoff else "",
        f"**Next:** {text(next_step)}",
    ]
    body = "\n\n".join(p for p in parts if p)
    if run.job_key is None:
        return body  # a human or platform stage: no session hands anything on
    # A session's report and handoff also live here, for when Redis loses them. The
    # block goes last and whole: what people read is cut to leave it room.
    block = encode_block(
        ReportBlock(
            job_key=run.job_key,
            stage=artifact_stage(run.stage, run.role),
            iteration=run.iteration,
            phase=run.phase,
            report=rep,
            handoff=handoff,
        )
    )
    return f"{clip(body, COMMENT_MAX - len(block) - 2)}\n\n{block}"


def usage_line(rep: Report) -> str:
    """What the CLI or the agent said it used: a session without the model gateway."""
    u = rep.usage
    return f"Usage: {u.input_tokens} in / {u.output_tokens} out tokens, ${u.cost_usd:.2f}"


def spend_line(s: Spend) -> str:
    """What the model gateway metered of one session."""
    return (
        f"Spend: {s.input_tokens} in, {s.cache_read_tokens} cache read, "
        f"{s.cache_write_tokens} cache write, {s.output_tokens} out tokens in "
        f"{s.requests} model request{'' if s.requests == 1 else 's'}, "
        f"{spent_words(s.cost_usd, s)}"
    )


def ticket_spend_line(rec: Record) -> str:
    """The ticket's spend so far, against its cap if it has one."""
    cap = rec.cost_cap_usd
    of = f" of its ${cap:.2f} cap" if cap is not None else ""
    unknown = Spend(unpriced_requests=rec.unpriced_requests)
    return f"Ticket so far: {spent_words(rec.cost_used, unknown)}{of}"


def spent_words(cost_usd: float, spend: Spend) -> str:
    """ "$0.42", "$0.42 + price unknown for 3 requests", or "price unknown" """
    cost = f"${cost_usd:.2f}"
    n = spend.unpriced_requests
    if n == 0:
        return cost
    if n == spend.requests and cost_usd == 0:
        return "price unknown"
    return f"{cost} + price unknown for {n} request{'' if n == 1 else 's'}"


def _bullets(title: str, items: tuple[str, ...]) -> str:
    if not items:
        return ""
    return f"**{title}**\n" + "\n".join(f"- {text(' '.join(i.split()))}" for i in items)


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _handoff(h: Handoff) -> str:
    parts = [
        text(h.summary),
        _bullets("Decisions", h.decisions),
        _bullets("Constraints", h.constraints),
        _bullets("Open questions", h.open_questions),
    ]
    return "\n\n".join(p for p in parts if p)


def question(rec: Record, reason: str) -> str:
    return (
        f"@{rec.ticket.asked} Ballet needs an answer to carry on: {text(reason)}\n\n"
        "Reply with `/ballet answer <text>` to re-run the stage with your answer, "
        "`/ballet retry` to re-run it as is, or `/ballet cancel`."
    )


def approval_request(rec: Record, note: str) -> str:
    who = " ".join(f"@{a}" for a in rec.pipeline.approvers or ()) or f"@{rec.ticket.asked}"
    why = f"\n\n{text(note)}" if note else ""
    return (
        f"{who} stage `{rec.stage}` waits for a person: `/ballet approve` (optionally naming "
        f"the head SHA) or `/ballet reject <reason>`.{why}"
    )


def knowledge_report(rec: Record) -> str:
    finished = [r for r in rec.history if r.summary and r.role is None]
    body = "\n\n".join(f"**{text(r.stage)}**: {text(r.summary)}" for r in finished)
    return f"### Knowledge report for #{rec.ticket.number}\n\n{body or '_No findings reported._'}"


def status(rec: Record) -> str:
    parts = [
        f"Status: {_STATUS_WORDS[rec.status]}, stage `{rec.stage or '-'}`, iteration "
        f"{rec.iteration}, attempt {rec.attempt}.",
        waiting_line(rec),
        worker_line(rec),
        signoffs_line(rec),
    ]
    return "\n\n".join(p for p in parts if p)
