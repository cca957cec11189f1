"""`ballet sandbox demo --keep`: after the merge the stack stays up, the demo says where
to look, and those addresses answer until Ctrl-C, which stops everything."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest


def test_the_kept_demo_says_where_to_look_and_serves_until_ctrl_c(tmp_path: Path) -> None:
    demo = subprocess.Popen(
        [sys.executable, "-m", "ballet", "sandbox", "demo", "--keep", "--data", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    said: list[str] = []
    try:
        assert demo.stdout is not None
        for line in demo.stdout:  # the demo's own 120 s timeout bounds this
            said.append(line)
            if "the sandbox's API:" in line:
                break
        text = "".join(said)
        assert "merged as" in text and "kept running, until Ctrl-C" in text, text
        # The person's step: Ballet waited for a writer's approval of the head, a
        # maintainer gave it, and only then did the pull request merge.
        waits = text.index("Ballet waits for a person: a person to approve the head")
        approved = text.index("carol (maintainer) approved PR #")
        assert waits < approved < text.index("merged as"), text
        page = re.search(r"the ticket's page:\s+(\S+)", text)
        api = re.search(r"the sandbox's API:\s+(\S+)", text)
        assert page and api, text
        # The demo has ended; its pages have not.
        ticket = httpx.get(page.group(1), timeout=30)
        assert ticket.status_code == 200
        assert "acme/calculator" in ticket.text and "done" in ticket.text
        pulls = httpx.get(api.group(1), timeout=30).json()
        assert [pull["merged_at"] is not None for pull in pulls] == [True]
        repo_api = api.group(1).split("/pulls")[0]
        reviews = httpx.get(f"{repo_api}/pulls/{pulls[0]['number']}/reviews", timeout=30)
        approvals = [(r["user"]["login"], r["state"], r["commit_id"]) for r in reviews.json()]
        assert approvals == [("carol", "APPROVED", pulls[0]["head"]["sha"])], approvals

        demo.send_signal(signal.SIGINT)
        assert demo.wait(timeout=60) == 130
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    with pytest.raises(httpx.ConnectError):
        httpx.get(page.group(1), timeout=5)
