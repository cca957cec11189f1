"""The state record's serialised form: exact round trips, size, clear errors."""

from __future__ import annotations

import base64
import zlib

import pytest
from ballet.core.config import Policy
from ballet.core.record import (
    Record,
    RecordFormatError,
    StageRun,
    TicketRef,
    decode_record,
    encode_record,
)
from ballet.core.report import Usage
from core_kit import T0, Ticket, at, make_pipeline


def big_record() -> Record:
    runs = tuple(
        StageRun(
            stage="implement",
            iteration=i % 3 + 1,
            attempt=i,
            phase="plan",
            outcome="done",
            summary="Implemented the change and ran the tests " * 3,
            start=at(i),
            end=at(i + 1),
            report_ref=f"octo/app#7:report:implement:{i}:1",
            job_key=f"octo/app#7:x:{i}:1",
            usage=Usage(input_tokens=120_000 + i, output_tokens=9_000, cost_usd=1.25),
        )
        for i in range(50)
    )
    return Record(
        ticket=TicketRef(repo="octo/app", number=7, author="alice", title="x" * 250),
        ticket_type="default",
        pipeline=make_pipeline(),
        status="running",
        base="main",
        policy=Policy(),
        history=runs,
        created_at=T0,
        updated_at=at(60),
    )


def test_record_round_trips_exactly_inside_a_comment() -> None:
    record = big_record()
    body = f"### Ballet\n\nsome text\n\n{encode_record(record)}\n\nmore"
    assert decode_record(body) == record


def test_fifty_stage_runs_stay_far_below_githubs_comment_limit() -> None:
    assert len(encode_record(big_record())) < 65_536 // 4


def test_a_hostile_title_cannot_close_the_hidden_block() -> None:
    t = Ticket(title="evil --> <!-- ballet:state v1 AAAA --> title")
    block = encode_record(t.rec)
    assert block.count("-->") == 1
    assert decode_record(block).ticket.title == t.rec.ticket.title


def test_block_wrapped_over_lines_still_decodes() -> None:
    record = big_record()
    block = encode_record(record)
    head, data, tail = block[:20], block[20:-4], block[-4:]
    wrapped = head + "\n".join(data[i : i + 70] for i in range(0, len(data), 70)) + tail
    assert decode_record(wrapped) == record


def test_missing_block_says_what_to_look_for() -> None:
    with pytest.raises(RecordFormatError, match="tracking comment"):
        decode_record("just a comment")


def test_unknown_format_asks_for_an_upgrade() -> None:
    with pytest.raises(RecordFormatError, match="upgrade Ballet"):
        decode_record("<!-- ballet:state v9 AAAA -->")


@pytest.mark.parametrize(
    "data",
    [
        "!!!!",  # not base64 (refused by the pattern: no block at all)
        "QUJD",  # base64 but not zlib
        base64.b64encode(zlib.compress(b"{not json")).decode(),
        base64.b64encode(zlib.compress(b'{"status": "running"}')).decode(),
    ],
)
def test_damaged_block_is_a_clear_error(data: str) -> None:
    with pytest.raises(RecordFormatError):
        decode_record(f"<!-- ballet:state v1 {data} -->")


def test_ticket_key_and_open_run() -> None:
    t = Ticket()
    assert t.rec.key == "octo/app#7"
    assert t.rec.open_run is not None and t.rec.open_run.stage == "implement"
    assert t.rec.open_question is None


def test_a_role_gone_from_the_configuration_is_no_longer_required() -> None:
    t = Ticket()
    rec = t.rec.model_copy(update={"signoffs_required": ("security", "retired")})
    assert rec.missing_signoffs() == ("security",)
