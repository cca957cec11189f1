"""Reports rendered as GitHub shows them, through the allowlist; times people can read,
and where a ticket's time went (pure functions, no server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from ballet.core.config import Policy, ResolvedPipeline
from ballet.core.durations import spoken
from ballet.core.record import QA, Record, StageRun, TicketRef
from ballet.core.resolve import default_config, resolve_pipeline
from ballet.watch.markdown import rendered
from ballet.watch.render import duration
from ballet.watch.times import ticket_times
from watch_kit import pipeline_runtime

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_github_flavoured_markdown_is_rendered() -> None:
    html = rendered(
        "## Done\n\n**Tests** pass, `make test` ~~fails~~.\n\n| file | lines |\n|---|---|\n"
        "| a.py | 12 |\n\n- [x] one\n\n```python\nprint(1)\n```\n\n[docs](https://example.com/d)"
    )
    assert "<h2>Done</h2>" in html and "<strong>Tests</strong>" in html
    assert "<code>make test</code>" in html and "<s>fails</s>" in html
    assert "<table>" in html and "<td>a.py</td>" in html
    assert '<code class="language-python">print(1)' in html
    assert '<a href="https://example.com/d" rel="nofollow noopener noreferrer">docs</a>' in html


@pytest.mark.parametrize(
    ("hostile", "gone"),
    [
        ("<script>alert(1)</script>after", ("<script", "alert(1)")),
        ('<img src=x onerror="alert(1)">', ("<img", "onerror")),
        ('<b onmouseover="alert(1)">hi</b>', ("onmouseover",)),
        ('<a href="javascript:alert(1)">x</a>', ("javascript:",)),
        ("[x](javascript:alert(1))", ("href",)),
        ('<p style="position:fixed;top:0">cover</p>', ("style=", "position")),
        ("<style>body{display:none}</style>", ("<style", "display:none")),
        ('<iframe src="https://evil.example"></iframe>', ("<iframe", "evil.example")),
        ('<svg onload="alert(1)"><circle/></svg>', ("<svg", "onload")),
        ('<form action="/logout"><button>go</button></form>', ("<form", "<button")),
        ('<details open ontoggle="alert(1)"><summary>s</summary></details>', ("ontoggle",)),
    ],
)
def test_markup_that_could_run_or_restyle_is_dropped(hostile: str, gone: tuple[str, ...]) -> None:
    html = rendered(f"Report.\n\n{hostile}\n")
    assert "Report." in html
    for text in gone:
        assert text not in html


def test_allowed_inline_html_stays_as_on_github() -> None:
    html = rendered("<details><summary>Log</summary>\n\nit <kbd>Ctrl</kbd>+C\n\n</details>")
    assert "<details><summary>Log</summary>" in html and "<kbd>Ctrl</kbd>" in html


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0.0, "0 ms"),
        (0.004, "4 ms"),
        (0.34, "340 ms"),
        (0.9994, "999 ms"),
        (1.0, "1.0 s"),
        (4.25, "4.2 s"),
        (42.9, "42 s"),
        (185, "3m 05s"),
        (7500, "2h 05m"),
        (3 * 86400 + 4 * 3600 + 59, "3d 04h"),
        (-2, "0 ms"),  # clocks of two machines: never a negative time
    ],
)
def test_durations_read_as_people_say_them(seconds: float, words: str) -> None:
    assert spoken(seconds) == words


def test_a_run_under_a_second_is_no_longer_0s() -> None:
    assert duration(T0, T0 + timedelta(milliseconds=250)) == "250 ms"
    assert duration(None) == "—"


def _pipeline(**changes: object) -> ResolvedPipeline:
    return resolve_pipeline(default_config(pipeline_runtime()), ()).model_copy(update=changes)


def _record(
    history: tuple[StageRun, ...],
    status: str = "running",
    questions: tuple[QA, ...] = (),
    end_minutes: float = 60,
    manual_merge: bool = False,
) -> Record:
    policy = Policy(merge="manual") if manual_merge else Policy()
    return Record(
        ticket=TicketRef(repo="acme/app", number=1, author="alice", title="t"),
        ticket_type="default",
        pipeline=_pipeline(),
        status=status,  # type: ignore[arg-type]
        stage=history[-1].stage if history else "implement",
        base="main",
        history=history,
        questions=questions,
        policy=policy,
        created_at=T0,
        updated_at=T0 + timedelta(minutes=end_minutes),
    )


def run(stage: str, start: float, end: float | None, job: bool = True) -> StageRun:
    return StageRun(
        stage=stage,
        iteration=1,
        attempt=1,
        start=T0 + timedelta(minutes=start),
        end=None if end is None else T0 + timedelta(minutes=end),
        job_key=f"acme/app#1:{stage}:1:1" if job else None,
    )


def test_where_an_ended_tickets_time_went() -> None:
    asked = QA(question="Which API?", stage="implement", asked_at=T0 + timedelta(minutes=10))
    history = (
        run("implement", 0, 10),  # a session: 10 minutes
        run("implement", 25, 40),  # after the question's 15 minutes: 15 more
        run("review", 40, 45),
        run("integrate", 45, 50, job=False),  # GitHub's merge: 5 minutes
    )
    times = ticket_times(_record(history, "done", (asked,), end_minutes=50), T0 + timedelta(days=9))
    assert times.ended and times.lead == 50 * 60  # the label to the end, not to now
    assert (times.sessions, times.people, times.github) == (30 * 60, 15 * 60, 5 * 60)


def test_a_live_ticket_counts_to_now_and_a_manual_merge_waits_for_people() -> None:
    history = (run("implement", 0, 10), run("integrate", 10, None, job=False))
    rec = _record(history, "waiting", manual_merge=True)
    times = ticket_times(rec, T0 + timedelta(minutes=70))
    assert not times.ended and times.lead == 70 * 60
    assert (times.sessions, times.people, times.github) == (10 * 60, 60 * 60, 0)


def test_an_open_question_waits_for_people_until_now() -> None:
    asked = QA(question="Which API?", stage="implement", asked_at=T0 + timedelta(minutes=5))
    rec = _record((run("implement", 0, 5),), "waiting", (asked,))
    times = ticket_times(rec, T0 + timedelta(minutes=65))
    assert (times.sessions, times.people) == (5 * 60, 60 * 60)
