"""The pages over real HTTP: what Ballet is, the tickets a viewer may see, a ticket with
its pipeline and runs, a finished session's log in the page and as a download."""

from __future__ import annotations

import pytest
from watch_kit import Site, finish_session, finished_log, new_ticket

pytestmark = pytest.mark.anyio


async def test_home_says_what_ballet_is_and_links_the_tickets(site: Site) -> None:
    async with site.browser() as browser:
        home = await browser.get("/")
    assert home.status_code == 200
    assert "runs AI coding agents" in home.text and 'href="/tickets"' in home.text
    assert "Sign in with GitHub" in home.text
    assert "script-src 'nonce-" in home.headers["content-security-policy"]
    assert home.headers["cache-control"] == "no-store"


async def test_a_public_ticket_its_runs_and_its_finished_log(site: Site) -> None:
    repo = await site.create_repo("acme", "open", private=False, collaborators={"alice": "write"})
    record = await new_ticket(site, repo, 3, "Add <b>multiply</b>")
    implement = record.open_run
    assert implement is not None and implement.job_key is not None
    record = await finish_session(site, record, "done", "Wrote multiply & its test.")
    hostile = "<script>alert('log')</script>"
    await finished_log(site, implement.job_key, ["FAIL: test_multiply", hostile, "OK"])

    async with site.browser() as browser:
        listing = await browser.get("/tickets")
        assert listing.status_code == 200
        assert 'href="/tickets/acme/open/3"' in listing.text
        assert "Add &lt;b&gt;multiply&lt;/b&gt;" in listing.text

        page = await browser.get("/tickets/acme/open/3")
        assert page.status_code == 200, page.text
        text = page.text
        assert "running" in text and "review" in text
        # The pipeline as a list: stages in order, the current one marked, the arrows.
        assert 'aria-current="step"' in text and "<strong>Review</strong> ◀ now" in text
        assert "on <code>changes_requested</code> → Implement" in text
        # Every stage run, with a link to its session.
        session = "/tickets/acme/open/3/sessions/implement/1/1"
        assert f'href="{session}"' in text and "Wrote multiply &amp; its test." in text
        assert 'href="/tickets/acme/open/3/sessions/review/1/1"' in text
        # Nobody signed in: no buttons.
        assert "/commands/" not in text

        log = await browser.get(session)
        assert log.status_code == 200
        assert "FAIL: test_multiply" in log.text and "run the tests" in log.text
        assert "&lt;script&gt;alert(&#39;log&#39;)&lt;/script&gt;" in log.text
        assert hostile not in log.text
        assert 'id="log-search"' in log.text and "data-live" not in log.text
        nonce = log.headers["content-security-policy"].split("'nonce-")[1].split("'")[0]
        assert f'<script nonce="{nonce}">' in log.text

        raw = await browser.get(f"{session}/log.txt")
        assert raw.status_code == 200
        assert raw.headers["content-type"] == "text/plain; charset=utf-8"
        assert raw.headers["content-disposition"].startswith("attachment;")
        assert raw.text == f"FAIL: test_multiply\n{hostile}\nOK\n"

        missing = await browser.get("/tickets/acme/open/3/sessions/implement/1/2")
        assert missing.status_code == 404
