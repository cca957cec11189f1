"""Helpers for the session-job tests: a real engine driving tickets, a real bare remote,
a scripted agent, and the shared fake GitHub seeded with the ticket's repository and issue."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ballet.core.config import Budget, Phase, Policy, ResolvedPipeline, ResolvedStage, Runtime
from ballet.core.effects import SessionSpec, StartSession
from ballet.core.events import AnyEvent, TicketRequested
from ballet.core.machine import IllegalEvent, advance
from ballet.core.record import Record
from ballet.tickets.store import RecordStore
from fake_github import INSTALLATION_ID, FakeGitHub

REPO = "octo/demo"
ISSUE = 7
ISSUE_BODY = "Please greet.\n\n## Acceptance criteria\n\n- [ ] says hello\n"
ISSUE_URL = f"https://github.com/{REPO}/issues/{ISSUE}"
HOUSE_STYLE = "Write like the house: short sentences."
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

# The scripted agent: commits a file, reports what its context held, and (when
# its argument names a file) writes its pid namespace there and hangs with a child.
AGENT = r"""
import json, os, subprocess, sys, time
from pathlib import Path
context = json.loads(Path(os.environ["BALLET_CONTEXT"]).read_text())
prompt = Path(os.environ["BALLET_PROMPT"]).read_text()
hang = Path(sys.argv[1]) if len(sys.argv) > 1 else None
if hang is not None and not hang.exists():  # hangs on its first run only
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    hang.with_suffix(".tmp").write_text(os.readlink("/proc/self/ns/pid"))
    hang.with_suffix(".tmp").rename(hang)
    time.sleep(600)
stage = os.environ["BALLET_STAGE"]
Path(f"{stage}.txt").write_text(f"{stage} was here\n")
subprocess.run(["git", "add", "-A"], check=True)
subprocess.run(["git", "commit", "-q", "-m", f"{stage}: work"], check=True)
seen = {
    "body": context["ticket"]["body"],
    "labels": context["ticket"]["labels"],
    "url": context["ticket"]["url"],
    "earlier": [[r["stage"], r["report"]["summary"]] for r in context["earlier_reports"]],
    "house_style_in_prompt": "house: short sentences" in prompt,
    "token_in_env": any("ghs_" in value for value in os.environ.values()),
}
outcome = {"implement": "done", "review": "approve"}.get(stage, "done")
report = {"outcome": outcome, "summary": f"{stage} finished", "details": json.dumps(seen)}
Path(os.environ["BALLET_REPORT"]).write_text(json.dumps(report))
"""


def agent_runtime(script: Path, *args: str) -> Runtime:
    return Runtime(adapter="command", command=(sys.executable, str(script), *args))


def pipeline(runtime: Runtime, phases: tuple[Phase, ...] = ()) -> ResolvedPipeline:
    def agent(stage_id: str, **kw: Any) -> ResolvedStage:
        return ResolvedStage(
            id=stage_id,
            kind="agent",
            name=stage_id.title(),
            runtime="script",
            runtime_config=runtime,
            **kw,
        )

    return ResolvedPipeline(
        name="default",
        version=2,
        hash="sha256:jobs",
        ticket_type="default",
        branch="ballet/{ticket}-{slug}",
        base=None,
        iteration_limit=3,
        budget=Budget(),
        signoffs=(),
        roles={},
        approvers=None,
        policy=Policy(),
        stages=(
            agent(
                "implement",
                skills=("implementer", "house-style"),
                phases=phases,
                next={"done": "review"},
            ),
            agent("review", skills=("reviewer",), next={"approve": "$done"}),
        ),
        custom_skills={"house-style": HOUSE_STYLE},
    )


class EngineTickets:
    """The ticket service's contract (`handle`) on the real engine and record store.

    What the GitHub edge's TicketService does minus GitHub: lock, load, advance,
    commit. It keeps the effects each event produced so tests can follow them.
    """

    def __init__(self, store: RecordStore) -> None:
        self.store = store
        self.records: dict[str, Record] = {}
        self.applied: list[AnyEvent] = []
        self.refused: list[AnyEvent] = []
        self.starts: list[StartSession] = []

    async def request(self, runtime: Runtime, phases: tuple[Phase, ...] = ()) -> StartSession:
        event = TicketRequested(
            now=T0,
            repo=REPO,
            issue=ISSUE,
            author="octocat",
            title="Add a greeting",
            body=ISSUE_BODY,
            labels=("ballet",),
            pipeline=pipeline(runtime, phases),
            default_branch="main",
        )
        await self.store.remember_installation(REPO, INSTALLATION_ID)
        await self.handle(f"{REPO}#{ISSUE}", event, event_id="request")
        return self.starts[-1]

    async def handle(self, key: str, event: AnyEvent, *, event_id: str | None = None) -> bool:
        async with self.store.locked(key):
            record = self.records.get(key)
            try:
                new, effects = advance(record, event)
            except IllegalEvent:
                self.refused.append(event)
                return False
            await self.store.commit(new, [], event_id)
        self.records[key] = new
        self.applied.append(event)
        self.starts.extend(e for e in effects if isinstance(e, StartSession))
        return True


def seeded_github() -> FakeGitHub:
    """The shared fake GitHub holding the ticket's repository and its open issue."""
    github = FakeGitHub()
    github.add_repo(REPO)
    github.add_issue(
        REPO,
        ISSUE,
        title="Add a greeting",
        body=ISSUE_BODY,
        labels=("ballet", "ballet:running"),
    )
    return github


def start_session(stage: str = "implement", pool: str = "default") -> StartSession:
    """A launch of `stage`'s session of octo/app#7 on `pool`, with a do-nothing runtime."""
    spec = SessionSpec(
        job_key=f"octo/app#7:{stage}:1:1",
        repo="octo/app",
        issue=7,
        title="t",
        author="alice",
        stage=stage,
        iteration=1,
        attempt=1,
        runtime="script",
        runtime_config=Runtime(adapter="command", command=("true",)),
        pool=pool,
        timeout_minutes=5,
        branch="ballet/7-t",
        base="main",
        pipeline="default",
        pipeline_version=1,
    )
    return StartSession(repo="octo/app", spec=spec)
