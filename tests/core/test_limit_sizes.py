"""Sizes as people write them, and a session's limits: the deployment's, lowered by
`.ballet.yml`, never raised (core/session_limits.py)."""

from __future__ import annotations

import pytest
from ballet.core.session_limits import (
    GIB,
    MIB,
    Limits,
    LimitValues,
    effective_limits,
    format_size,
    lowered,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512MiB", 512 * MIB),
        ("4GiB", 4 * GIB),
        ("4gib", 4 * GIB),
        ("4Gi", 4 * GIB),
        ("1.5GiB", 3 * GIB // 2),
        ("2GB", 2_000_000_000),
        ("2G", 2_000_000_000),
        ("64M", 64_000_000),
        ("100kB", 100_000),
        (" 8 GiB ", 8 * GIB),
        ("1048576B", MIB),
    ],
)
def test_sizes_in_iec_and_si_units(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("lots", "is not a size; write a number and a unit, e.g. 512MiB"),
        ("-1GiB", "is not a size"),
        ("4", "has no unit; write e.g. 4MiB or 4GiB (or 4B for bytes)"),
        ("4 parsecs", "unknown unit 'parsecs'; use B, KiB, MiB, GiB, TiB"),
        ("4EiB", "unknown unit"),
        ("9000PiB", "larger than any machine"),
        ("0GiB", "too small; write at least 1 B"),
    ],
)
def test_nonsense_is_refused_saying_what_to_write(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=None) as refused:
        parse_size(text)
    assert says in str(refused.value)


def test_a_minimum_is_named_in_the_units_people_read() -> None:
    with pytest.raises(ValueError) as refused:
        parse_size("1MiB", minimum=16 * MIB)
    assert "write at least 16 MiB" in str(refused.value)
    assert format_size(3 * GIB // 2) == "1.5 GiB"
    assert format_size(512) == "512 B"


def test_a_stage_lowers_its_runtime_limits_each_to_the_lower() -> None:
    runtime = Limits(memory="2GiB", processes=100, cpus=1.5)
    stage = Limits(memory="1GB", disk="3GiB", cpus=4)
    assert lowered(runtime, stage) == Limits(memory="1GB", disk="3GiB", processes=100, cpus=1.5)
    assert lowered(runtime, None) == runtime
    assert lowered(None, stage) == stage


def test_a_file_may_lower_the_deployment_limits_never_raise_them() -> None:
    deployment = LimitValues(memory=4 * GIB, disk=8 * GIB, processes=512, cpus=2.0)
    asked = Limits(memory="8GiB", disk="1GiB", cpus=0.5)
    effective = effective_limits(deployment, asked)
    assert effective.values == LimitValues(memory=4 * GIB, disk=GIB, processes=512, cpus=0.5)
    (note,) = effective.notes
    assert "`limits: memory: 8GiB` in .ballet.yml is above this deployment's 4 GiB" in note
    assert "ran with 4 GiB" in note and "BALLET_SESSION_MAX_MEMORY" in note


def test_a_limit_this_worker_cannot_enforce_is_said_to_be_unenforced() -> None:
    effective = effective_limits(LimitValues(memory=GIB), Limits(processes=64))
    assert effective.values == LimitValues(memory=GIB)
    assert "is not enforced: this worker cannot limit processes" in effective.notes[0]
    assert effective_limits(LimitValues(memory=GIB), None).notes == ()
