"""Watching a session in a real browser: headless Chromium signs in to Ballet
through (the sandbox's) GitHub and watches a running session's log grow on its
page, fed by server-sent events, then sees the finished log in the page itself.

A screenshot of the live page is kept in the test's temporary directory (and in
`$BALLET_SCREENSHOTS`, when set: docs/images/ is made that way). Every test runs
in CI: `./run test` installs Debian's chromium.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from ballet.demo import repo as demo
from ballet.demo.stack import Stack
from ballet.demo.watch import View
from browser import Browser, chromium_binary
from scenarios import lands_alone, merged, ticket, wait_until

pytestmark = pytest.mark.anyio

PNG = b"\x89PNG\r\n\x1a\n"
# An agent that talks for a while before doing the demo agent's work.
CHATTY = """\
import subprocess, sys, time

for i in range(1, 41):
    print(f"step {i:02d}: thinking about multiply", flush=True)
    time.sleep(0.25)
sys.exit(subprocess.run([sys.executable, ".ballet/agent.py"], check=False).returncode)
"""
YML = demo.BALLET_YML.replace(
    "runtimes:\n",
    "runtimes:\n  chatty: {adapter: command, command: [python3, .ballet/chatty.py]}\n",
).replace("- {id: implement, kind: agent,", "- {id: implement, kind: agent, runtime: chatty,")


def lines_shown(browser: Browser) -> int:
    text: str = browser.evaluate("document.querySelector('#log').textContent")
    return text.count("thinking about multiply")


async def test_a_reader_watches_a_private_sessions_log_grow_in_chromium(
    stack: Stack, tmp_path: Path
) -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    request = demo.new_repo_request("watched", ballet_yml=lands_alone(YML))
    request["private"] = True
    files = request["files"]
    assert isinstance(files, dict)
    files[".ballet/chatty.py"] = CHATTY
    repo = (await stack.create_repo(request))["full_name"]
    number = await ticket(stack, repo)

    def running(v: View) -> bool:
        return (
            v.record is not None and v.record.status == "running" and v.record.pr_number is not None
        )

    await wait_until(stack, repo, number, running, timeout=60)
    page = f"{stack.web_url}/tickets/{repo}/{number}/sessions/implement/1/1"

    def watch() -> tuple[int, int, bytes]:
        with Browser(binary, tmp_path / "profile") as browser:
            browser.goto(
                f"{stack.web_url}/login?next=/tickets/{repo}/{number}/sessions/implement/1/1"
            )
            # GitHub (the sandbox) asks who is signing in: bob, who may read the repository.
            browser.wait_for("!!document.querySelector('input[name=login]')", "GitHub's sign-in")
            browser.evaluate("document.querySelector('input[name=login]').value = 'bob'")
            browser.evaluate("document.querySelector('form').submit()")
            browser.wait_for(
                f"location.href === {page!r} && !!document.querySelector('#log')",
                "back on the session's page, signed in",
            )
            browser.wait_for(
                "document.querySelector('#log').textContent.includes('step 05')",
                "the live log shows the session's lines",
            )
            first = lines_shown(browser)
            shown = "document.querySelector('#log').textContent.split('thinking').length"
            browser.wait_for(f"{shown} > {first + 8}", "the log grows while the page is open")
            grown = lines_shown(browser)
            shot = browser.screenshot(tmp_path / "session-live.png")
            browser.wait_for(
                "document.querySelector('#log').textContent.includes('step 40')",
                "the last line arrives live",
                limit=60,
            )
            # Every line once: the live stream neither repeats nor drops any.
            assert lines_shown(browser) == 40
            return first, grown, shot

    first, grown, shot = await asyncio.to_thread(watch)
    assert shot.startswith(PNG)
    assert 0 < first < grown < 40
    kept = os.environ.get("BALLET_SCREENSHOTS")
    if kept:
        shutil.copy(tmp_path / "session-live.png", Path(kept) / "session-live.png")
    view = await wait_until(stack, repo, number, merged, timeout=120)
    assert view.record is not None and view.record.status == "done"
