"""Screenshots of Ballet's pages at a desktop's and a phone's width, for people to look at.

./run screenshots [--out DIR]     # default: screenshots/ (git ignores it)

Starts the sandbox demo stack (sandbox, Ballet's web app and worker, an embedded
Valkey), makes two tickets as a person would: one sent back once by review and then
merged, one waiting for a person's approval in a pipeline with phases; then writes
each page (home, listing, fleet, both tickets, a session) as DIR/<page>-desktop.png
and DIR/<page>-phone.png with headless Chromium (Debian's `chromium`).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from ballet.demo import repo as demo
from ballet.demo.run import file_ticket
from ballet.demo.stack import Stack, running_stack
from ballet.demo.watch import View, wait_until
from ballet.logs import configure_logging

OUT = Path(__file__).resolve().parents[1] / "screenshots"
# Width and height in CSS pixels; the height is a long page's, the rest is blank.
SIZES = {"desktop": (1280, 1500), "phone": (390, 2400)}
# Phases, a person's approval before the merge: the drawing's other shapes.
APPROVED_YML = demo.BALLET_YML.replace(
    "- {id: implement, kind: agent, skills: [implementer], timeout_minutes: 5,",
    "- {id: implement, kind: agent, skills: [implementer], timeout_minutes: 5,"
    " phases: [plan, implement],",
).replace(
    "next: {pass: integrate, fail: implement}}",
    "next: {pass: approval, fail: implement}}\n"
    "      - {id: approval, kind: human, next: {approve: integrate, reject: implement}}",
)
REWORKED_BODY = demo.ISSUE_BODY + "\ndemo:review=changes_requested@1\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write (default {OUT})")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("screenshots: Chromium is missing: apt-get install chromium", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    configure_logging("warning")
    with tempfile.TemporaryDirectory(prefix="ballet-screenshots-") as data:
        written = asyncio.run(_shoot(Path(data), chromium, args.out))
    for path in written:
        print(path)
    return 0


async def _shoot(data: Path, chromium: str, out: Path) -> list[Path]:
    async with running_stack(data / "stack") as stack:
        pages = await _tickets(stack)
        missing = [name for name, path in pages.items() if not await _answers(stack, path)]
        for name in missing:
            print(f"screenshots: {pages.pop(name)} does not answer here; left out", file=sys.stderr)
        shots = [
            (out / f"{name}-{size}.png", f"{stack.web_url}{path}", SIZES[size])
            for name, path in pages.items()
            for size in SIZES
        ]
        for path, url, (width, height) in shots:
            await asyncio.to_thread(
                _screenshot, chromium, data / "profile", url, width, height, path
            )
        return [path for path, _, _ in shots]


async def _tickets(stack: Stack) -> dict[str, str]:
    """Two tickets, one ended, one waiting for a person; the pages worth a look."""
    await stack.create_repo(demo.new_repo_request())
    await stack.create_repo(demo.new_repo_request("approved", ballet_yml=APPROVED_YML))
    merged_repo = f"{demo.OWNER}/{demo.NAME}"
    waiting_repo = f"{demo.OWNER}/approved"
    merged = await file_ticket(stack, merged_repo, demo.ISSUE_TITLE, REWORKED_BODY, demo.AUTHOR)
    waiting = await file_ticket(stack, waiting_repo, demo.ISSUE_TITLE, demo.ISSUE_BODY, "alice")

    def ended(view: View) -> bool:
        return view.record is not None and view.record.status == "done"

    def approving(view: View) -> bool:
        rec = view.record
        return rec is not None and rec.status == "waiting" and rec.stage == "approval"

    await wait_until(stack, merged_repo, merged, ended, timeout=180)
    await wait_until(stack, waiting_repo, waiting, approving, timeout=180)
    return {
        "home": "/",
        "tickets": "/tickets",
        "fleet": "/fleet",
        "ticket-merged": f"/tickets/{merged_repo}/{merged}",
        "ticket-waiting": f"/tickets/{waiting_repo}/{waiting}",
        "session": f"/tickets/{merged_repo}/{merged}/sessions/review/1/1",
    }


async def _answers(stack: Stack, path: str) -> bool:
    async with httpx.AsyncClient(base_url=stack.web_url, timeout=30) as client:
        return (await client.get(path)).status_code == 200


def _screenshot(
    chromium: str, profile: Path, url: str, width: int, height: int, path: Path
) -> None:
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={path}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


if __name__ == "__main__":
    sys.exit(main())
