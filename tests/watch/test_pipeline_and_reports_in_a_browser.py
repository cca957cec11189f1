"""The ticket's page in a real browser (Debian's chromium): the pipeline drawn with the
current stage marked (and moved when the ticket moves), a report's Markdown rendered,
and the markup an agent wrote into it neither present nor run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from browser import Browser, chromium_binary
from watch_kit import Site, finish_session, new_ticket

pytestmark = pytest.mark.anyio

# An agent's report summary: Markdown as GitHub renders it, and markup meant to run.
HOSTILE_REPORT = """\
**Implemented** `multiply` with a _table_:

| case | result |
|---|---|
| 2 × 3 | 6 |

<img src="x" onerror="window.pwned = 'img'"><script>window.pwned = 'script'</script>
<a href="javascript:window.pwned='link'" onclick="window.pwned='click'">docs</a>
<p style="position:fixed;inset:0;background:red" onmouseover="window.pwned='hover'">cover</p>
"""
CURRENT = "document.querySelector('#pipeline-drawing [data-current=true]')"


def current_stage(browser: Browser) -> str | None:
    stage: str | None = browser.evaluate(f"{CURRENT} && {CURRENT}.dataset.stage")
    return stage


async def test_the_drawing_marks_the_stage_and_the_report_is_rendered_not_run(
    site: Site, tmp_path: Path
) -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    repo = await site.create_repo("acme", "drawn", private=False, collaborators={})
    record = await new_ticket(site, repo, 4, "Add multiply")
    record = await finish_session(site, record, "done", HOSTILE_REPORT)
    assert record.stage == "review"

    with Browser(binary, tmp_path / "profile") as browser:

        def look() -> dict[str, object]:
            browser.goto(f"{site.web_url}/tickets/acme/drawn/4")
            browser.wait_for(f"!!{CURRENT}", "the pipeline drawn")
            browser.evaluate("window.sameDocument = true")
            box = f"{CURRENT}.querySelector('rect')"
            return {
                "stage": current_stage(browser),
                "fill": browser.evaluate(f"getComputedStyle({box}).fill"),
                "width": browser.evaluate(f"{box}.getBoundingClientRect().width"),
                "taken": browser.evaluate(
                    "[...document.querySelectorAll('#pipeline-drawing .arrow.taken text')]"
                    ".map(t => t.textContent)"
                ),
                "label": browser.evaluate(
                    "document.getElementById('pipeline-drawing').getAttribute('aria-labelledby')"
                ),
                "strong": browser.evaluate(
                    "[...document.querySelectorAll('td.md strong')].map(e => e.textContent)"
                ),
                "cells": browser.evaluate(
                    "[...document.querySelectorAll('td.md table td')].map(e => e.textContent)"
                ),
                "pwned": browser.evaluate("window.pwned === undefined ? null : window.pwned"),
                "hostile": browser.evaluate(
                    "document.querySelectorAll('main [onerror], main [onclick], main [onmouseover],"
                    " main [style], main img, main a[href^=javascript], .md script').length"
                ),
            }

        seen = await asyncio.to_thread(look)
        assert seen["stage"] == "review"
        assert seen["fill"] == "rgb(255, 211, 61)"  # the tracking comment's yellow
        assert isinstance(seen["width"], int | float) and seen["width"] > 100
        assert seen["taken"] == ["done"]  # implement → review, the way it went
        assert seen["label"] == "pl-title pl-desc"
        assert seen["strong"] == ["Implemented"] and seen["cells"] == ["2 × 3", "6"]
        assert seen["pwned"] is None and seen["hostile"] == 0

        # The session's page: the same report rendered, its source one click away.
        def session_page() -> tuple[object, object, object]:
            browser.goto(f"{site.web_url}/tickets/acme/drawn/4/sessions/implement/1/1")
            browser.wait_for("!!document.querySelector('details.raw')", "the session's report")
            browser.evaluate("document.querySelector('details.raw summary').click()")
            return (
                browser.evaluate("document.querySelector('.md table td').textContent"),
                browser.evaluate("document.querySelector('details.raw pre').textContent"),
                browser.evaluate("document.querySelectorAll('main [onerror], .md script').length"),
            )

        cell, source, hostile = await asyncio.to_thread(session_page)
        assert cell == "2 × 3" and source.strip() == HOSTILE_REPORT.strip()  # type: ignore[union-attr]
        assert hostile == 0

        # The ticket moves while its page is open: the drawing follows, no reload.
        await asyncio.to_thread(look)
        await finish_session(site, record, "approve", "Looks right.")
        await asyncio.to_thread(
            browser.wait_for, f"{CURRENT} && {CURRENT}.dataset.stage === 'verify'", "verify now"
        )
        assert await asyncio.to_thread(browser.evaluate, "window.sameDocument === true")
