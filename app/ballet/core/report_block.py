"""The structured report and handoff in a session's report comment, as a hidden block.

The next session of a ticket gets each earlier session's report and handoff from
Redis (`ballet.jobs.artifacts`); a flush or a restart without persistence loses
them, though Ballet posted each on the pull request. So every session's report
comment also carries them, in a hidden `<!-- ballet:report v1 … -->` block, and
a lost artifact is read back from GitHub.

Encoded like the record's state block (`ballet.core.record`): compact JSON,
zlib, base64. The base64 alphabet cannot close an HTML comment, whatever the
report says (`-->` included). The block is bounded by BLOCK_MAX: a report too
big for it loses text, loosest bounds first, and every cut says how much it cut.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ballet.core.limits import clip
from ballet.core.report import Handoff, Question, Report

REPORT_FORMAT = "v1"
BLOCK_START = "<!-- ballet:report "
# A report comment keeps at least 40,000 of GitHub's 65,536 characters for people.
BLOCK_MAX = 24_000
# The JSON inside, uncompressed: what a block may cost a reader's memory, however
# well a repetitive (or hostile, hand-made) text compresses.
RAW_MAX = 1_000_000
# Any text up to the end of the comment: damage inside is the decoder's to name.
_BLOCK = re.compile(r"<!-- ballet:report (?P<fmt>\S+) (?P<data>[\s\S]*?) -->")
# (text, item, items): the bounds tried in turn, none first, until the block fits.
# Any text compresses (hostile text least), so fitting is measured, not assumed.
_BOUNDS: tuple[tuple[int, int, int], ...] = (
    (16_000, 2_000, 50),
    (4_000, 500, 20),
    (1_000, 200, 10),
)
# The last resort: outcome, summary and handoff summary only, short enough for any text.
_BARE_TEXT = 500


class ReportBlock(BaseModel):
    """What identifies a session and what it handed on: a ticket's artifact, as GitHub keeps it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    job_key: str
    stage: str  # as the artifact names it: the stage id, or `signoff-<role>`
    iteration: int = Field(ge=1)
    phase: str | None = None
    report: Report
    handoff: Handoff | None = None
    clipped: bool = False  # fields were cut to fit BLOCK_MAX; each cut says so


class ReportBlockError(ValueError):
    """The comment holds no readable report block (edited, damaged or never had one)."""


def artifact_stage(stage: str, role: str | None) -> str:
    """The stage a session reports as: a sign-off session is the role's, not the stage's."""
    return f"signoff-{role}" if role else stage


def encode_block(block: ReportBlock) -> str:
    """The hidden block for a report comment, at most BLOCK_MAX characters."""
    for candidate in _candidates(block):
        raw = _raw(candidate)
        encoded = _encoded(raw)
        if len(raw) <= RAW_MAX and len(encoded) <= BLOCK_MAX:
            return encoded
    return _encoded(_raw(_bare(block)))


def decode_block(text: str) -> ReportBlock:
    """The report block of a comment body (its last one: Ballet appends it)."""
    matches = list(_BLOCK.finditer(text))
    if not matches:
        raise ReportBlockError(
            "no '<!-- ballet:report … -->' block found; was the report comment edited?"
        )
    match = matches[-1]
    if match["fmt"] != REPORT_FORMAT:
        raise ReportBlockError(
            f"report block format {match['fmt']!r} is not {REPORT_FORMAT!r}; upgrade Ballet"
        )
    try:
        unzip = zlib.decompressobj()
        data = base64.b64decode("".join(match["data"].split()), validate=True)
        raw = unzip.decompress(data, RAW_MAX + 1)
        if len(raw) > RAW_MAX:
            raise ValueError(f"over {RAW_MAX} bytes uncompressed")
        if not unzip.eof:
            raise zlib.error("truncated")
        return ReportBlock.model_validate(json.loads(raw))
    except (binascii.Error, zlib.error, ValueError, ValidationError) as exc:
        raise ReportBlockError(
            f"report block is damaged ({exc.__class__.__name__}: {_first_line(exc)}); "
            "was the report comment edited?"
        ) from exc


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [""])[0][:200]


def _candidates(block: ReportBlock) -> Iterator[ReportBlock]:
    yield block
    for text, item, items in _BOUNDS:
        yield _bounded(block, text, item, items)


def _raw(block: ReportBlock) -> bytes:
    return block.model_dump_json(exclude_defaults=True).encode()


def _encoded(raw: bytes) -> str:
    data = base64.b64encode(zlib.compress(raw, 9)).decode("ascii")
    return f"{BLOCK_START}{REPORT_FORMAT} {data} -->"


def _items(values: tuple[str, ...], item: int, items: int) -> tuple[str, ...]:
    kept = tuple(clip(v, item) for v in values[:items])
    left = len(values) - items
    return (*kept, f"… [{left} more cut]") if left > 0 else kept


def _bounded(block: ReportBlock, text: int, item: int, items: int) -> ReportBlock:
    r, h = block.report, block.handoff
    questions = tuple(
        Question(text=clip(q.text, item), blocking=q.blocking) for q in r.questions[:items]
    )
    if len(r.questions) > items:
        questions += (Question(text=f"… [{len(r.questions) - items} more questions cut]"),)
    report = r.model_copy(
        update={
            "summary": clip(r.summary, text),
            "details": clip(r.details, text),
            "decisions": _items(r.decisions, item, items),
            "constraints": _items(r.constraints, item, items),
            "open_questions": _items(r.open_questions, item, items),
            "questions": questions,
            "require_signoffs": _items(r.require_signoffs, item, items),
        }
    )
    handoff = None
    if h is not None:
        handoff = Handoff(
            summary=clip(h.summary, text),
            decisions=_items(h.decisions, item, items),
            constraints=_items(h.constraints, item, items),
            open_questions=_items(h.open_questions, item, items),
        )
    cut = report != r or handoff != h
    return block.model_copy(update={"report": report, "handoff": handoff, "clipped": cut})


def _bare(block: ReportBlock) -> ReportBlock:
    r, h = block.report, block.handoff
    report = Report(
        outcome=r.outcome,
        summary=clip(r.summary, _BARE_TEXT),
        details="[the rest of this report was cut: see the report comment]",
        usage=r.usage,
    )
    handoff = Handoff(summary=clip(h.summary, _BARE_TEXT)) if h is not None else None
    return block.model_copy(update={"report": report, "handoff": handoff, "clipped": True})
