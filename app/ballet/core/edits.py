"""Edits of a ticket's issue, and `/ballet refresh`: whose words a ticket runs on.

The rule (machine.TABLE's `issue_edited` rows and COMMANDS' `refresh`): the
pinned title and body change only by a person with write permission, by
editing the issue or by `/ballet refresh` (which adopts the issue's text as the
edge read it). An edit by anyone else (a bot, or an outsider who opened the
issue) is not heard: the sessions keep the pinned text, and the issue is told
once, in one notice comment that later unheard edits leave as it is. The next
session is told the text changed and by whom (`change_note`).
"""

from __future__ import annotations

from ballet.core import render, verbs
from ballet.core.commands import Command
from ballet.core.effects import MarkerKey, PostComment
from ballet.core.events import WRITE_PERMISSIONS, CommandIssued, IssueEdited, IssueText
from ballet.core.handlers import IllegalEvent
from ballet.core.limits import TITLE_MAX, clip
from ballet.core.pinned_text import TEXT_LOST, Adopted, is_pinned, pin
from ballet.core.record import Record
from ballet.core.tx import Tx

UNHEARD = "unheard-edit"  # the notice's marker: one comment, however many edits


def issue_edited(tx: Tx, ev: IssueEdited) -> None:
    text = tx.rec.text
    if text is None:
        raise IllegalEvent("the ticket pinned no text: its sessions read the issue as it is")
    if text.known and is_pinned(text, ev.title, ev.body):
        raise IllegalEvent("the issue's title and body are the pinned ones")
    if ev.permission in WRITE_PERMISSIONS and not ev.editor_is_bot:
        adopt(tx, IssueText(title=ev.title, body=ev.body), ev.editor, "edited")
        return
    if text.noticed:
        raise IllegalEvent(f"@{ev.editor}'s edit is not heard; the issue was told once already")
    tx.set(text=text.model_copy(update={"noticed": True}))
    rec = tx.rec
    key = MarkerKey(ticket=rec.key, kind="notice", extra=UNHEARD)
    body = (
        f"@{ev.editor} edited this issue after the ticket started. The edit is not part "
        f"of the ticket: Ballet's agents keep working from the title and body as "
        f"{_adopted(rec)}, and edits by anyone without write permission are not heard. "
        "Someone with write permission adopts the issue's current text by editing the "
        "issue themselves, or with `/ballet refresh`."
    )
    tx.emit(
        PostComment(
            repo=rec.ticket.repo,
            number=rec.ticket.number,
            marker=key,
            body=render.with_marker(body, key.render()),
        )
    )


def refresh(tx: Tx, ev: CommandIssued, cmd: Command) -> str | None:
    """Adopt the issue's current text, as the edge read it for this command; on a
    ticket that asked for it (its pinned text lost with Redis), run the stage again."""
    rec = tx.rec
    current = ev.issue_text
    if rec.text is None:
        return "this ticket pinned no text: its sessions read the issue as it is."
    if current is None:
        return "Ballet could not read the issue's text; try again in a moment."
    if not (rec.text.known and is_pinned(rec.text, current.title, current.body)):
        adopt(tx, current, ev.author, "refreshed")
        said = (
            f"The ticket now runs on the issue's current title and body, adopted by "
            f"@{ev.author}; the next session is told they changed."
        )
    elif not _asks_for_text(rec):
        said = "The issue's text is the ticket's already."
    else:
        said = ""  # a writer's edit adopted it already: the stage runs again, as asked
    if said:
        tx.reply(ev.comment_id, "refresh", said)
    qa = tx.rec.open_question
    if _asks_for_text(rec) and qa is not None:
        answered = qa.model_copy(update={"answer": "(text adopted)", "answered_by": ev.author})
        tx.set(questions=(*tx.rec.questions[:-1], answered))
        verbs.rerun(tx, qa.stage, qa.role, qa.phase, f"@{ev.author} adopted the issue's text")
    return None


def adopt(tx: Tx, text: IssueText, by: str, how: Adopted) -> None:
    rec = tx.rec
    pinned = pin(text.title, text.body, by, how, tx.now)
    tx.set(text=pinned, ticket=rec.ticket.model_copy(update={"title": clip(text.title, TITLE_MAX)}))


def change_note(rec: Record) -> str:
    """What the ticket's next session is told of its text: that it changed since the
    previous session began, and by whom; "" when it did not."""
    text = rec.text
    if text is None or text.how == "labelled":
        return ""
    # The open run is the session being told; the ones before it started earlier.
    earlier = [run.start for run in rec.history[:-1] if run.job_key is not None]
    if earlier and text.at <= max(earlier):
        return ""
    return f"The ticket's text changed since the last session: adopted from {_source(rec)}."


def _asks_for_text(rec: Record) -> bool:
    qa, waiting = rec.open_question, rec.waiting
    return (
        rec.status == "waiting"
        and waiting is not None
        and waiting.kind == "question"
        and qa is not None
        and qa.question == TEXT_LOST
    )


def _source(rec: Record) -> str:
    text = rec.text
    assert text is not None
    return {
        "labelled": f"@{text.by}'s label",
        "edited": f"@{text.by}'s edit",
        "refreshed": f"@{text.by}'s `/ballet refresh`",
    }[text.how]


def _adopted(rec: Record) -> str:
    text = rec.text
    assert text is not None
    when = text.at.strftime("%Y-%m-%d %H:%M UTC")
    return f"pinned at {when} (from {_source(rec)})"
