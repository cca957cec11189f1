"""A ticket's page over real HTTP: its questions and answers rendered from Markdown and
sanitized, with their source; its lead time and where the time went; a run under a
second in milliseconds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from ballet.core.record import QA
from ballet.tickets.store import RecordStore
from watch_kit import T0, Site, new_ticket

pytestmark = pytest.mark.anyio


async def test_questions_answers_and_times_on_a_tickets_page(site: Site) -> None:
    repo = await site.create_repo("acme", "asked", private=False, collaborators={})
    record = await new_ticket(site, repo, 5, "Asked")
    answered = QA(
        question="Which **API**? <img src=x onerror=alert(1)>",
        stage="implement",
        asked_at=T0,
        answer="Use `v2`, see [docs](https://example.com/v2) <script>alert(2)</script>",
        answered_by="carol",
    )
    open_one = QA(question="And the _name_?", stage="implement", asked_at=T0)
    run = record.history[0].model_copy(update={"end": T0 + timedelta(milliseconds=340)})
    record = record.model_copy(
        update={"questions": (answered, open_one), "history": (run,), "version": 2}
    )
    await RecordStore(site.redis).commit(record, [], None)

    async with site.browser() as browser:
        page = (await browser.get("/tickets/acme/asked/5")).text
    assert '<h2 id="questions">Questions</h2>' in page
    assert "Which <strong>API</strong>?" in page and "<code>v2</code>" in page
    assert '<a href="https://example.com/v2" rel="nofollow noopener noreferrer">docs</a>' in page
    assert "onerror" not in page.replace("onerror=alert(1)&gt;", "")  # only in the source
    assert "<script>alert" not in page and "<img" not in page
    # The source, as text, one click away.
    assert "<summary>Markdown source</summary><pre>Which **API**? &lt;img src=x" in page
    assert "Answered by @carol" in page
    assert "And the <em>name</em>?" in page and "<strong>Waiting for an answer</strong>" in page
    assert "<dt>Lead time</dt>" in page and "so far" in page
    assert "waiting for people" in page and "agent sessions 340 ms" in page
    assert "<td>340 ms</td>" in page
