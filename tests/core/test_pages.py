"""Where a ticket's runs link: one path scheme for the pages and GitHub's links."""

from __future__ import annotations

from ballet.core.effects import SetCheckRun
from ballet.core.pages import run_path, ticket_path
from core_kit import Ticket, make_pipeline


def test_check_runs_link_their_sessions_page_or_the_tickets() -> None:
    t = Ticket(pipeline=make_pipeline(), repo="octo/app")
    t.open_pr()
    t.finish("done", sha="h1")  # implement's check completes; review's starts
    done, started = t.of(SetCheckRun)
    assert done.name == "ballet/implement" and done.job_key == "octo/app#7:implement:1:1"
    assert done.page == "/tickets/octo/app/7/sessions/implement/1/1"
    assert started.page == "/tickets/octo/app/7/sessions/review/1/1"
    run = t.rec.history[0]
    assert run_path(t.rec, run) == done.page
    person = run.model_copy(update={"job_key": None})
    assert run_path(t.rec, person) == ticket_path("octo/app", 7) == "/tickets/octo/app/7"
