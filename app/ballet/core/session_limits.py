"""A session's resource limits: sizes as people write them, `.ballet.yml`'s `limits:`,
and what a session runs with once the deployment's own limits are applied.

The operator sets the most a session may use (`BALLET_SESSION_MAX_*`, read by
settings.py); a repository may lower it per runtime and per agent stage in
`.ballet.yml`, never raise it. A file is written without knowing the
deployment, so `ballet validate` checks only shape and units, and the worker
clamps what a file asks to its own limits and says so (`effective_limits`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

LimitName = Literal["memory", "disk", "processes", "cpus"]
LIMIT_NAMES: tuple[LimitName, ...] = ("memory", "disk", "processes", "cpus")
KIB, MIB, GIB = 1024, 1024**2, 1024**3
# Below these a session cannot even start: bubblewrap, its init, the relay and the
# agent are four processes, and the relay's threads count as processes too.
MIN_MEMORY = 16 * MIB
MIN_DISK = 1 * MIB
MIN_PROCESSES = 8
MIN_CPUS = 0.01  # the kernel's smallest CPU quota: 1 ms in every 100 ms
MAX_CPUS = 1024.0
MAX_SIZE = 2**62  # far beyond any machine; a typo such as 4EiB is refused
# Kubernetes' spelling: k, M, G, T and kB, MB, … are powers of 1000; Ki, Mi, … and
# KiB, MiB, … powers of 1024. Case is forgiven (`4gib`, `512mb`).
_UNITS: dict[str, int] = {
    "b": 1,
    **{p: 1000**i for i, p in enumerate("kmgtp", 1)},
    **{f"{p}b": 1000**i for i, p in enumerate("kmgtp", 1)},
    **{f"{p}i": 1024**i for i, p in enumerate("kmgtp", 1)},
    **{f"{p}ib": 1024**i for i, p in enumerate("kmgtp", 1)},
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str, *, minimum: int = 1) -> int:
    """Bytes of a size such as `512MiB`, `4GiB`, `2GB` or `1.5Gi`; ValueError saying
    what to write for anything else (a bare number is refused: bytes or GiB?)."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size; write a number and a unit, e.g. 512MiB or 4GiB")
    number, unit = match.groups()
    if not unit:
        raise ValueError(
            f"{text!r} has no unit; write e.g. {number}MiB or {number}GiB (or {number}B for bytes)"
        )
    factor = _UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(
            f"{text!r}: unknown unit {unit!r}; use B, KiB, MiB, GiB, TiB (powers of 1024) "
            "or kB, MB, GB, TB (powers of 1000)"
        )
    value = math.floor(float(number) * factor)
    if value < minimum:
        raise ValueError(f"{text!r} is too small; write at least {format_size(minimum)}")
    if value > MAX_SIZE:
        raise ValueError(f"{text!r} is larger than any machine; write a size in GiB or TiB")
    return value


def format_size(size: int) -> str:
    """`512 MiB`, `4 GiB`, `1.5 GiB`: the largest binary unit it is at least one of."""
    for unit, factor in (("TiB", 1024**4), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size >= factor:
            return f"{size / factor:.4g} {unit}"
    return f"{size} B"


def _memory(text: str) -> str:
    parse_size(text, minimum=MIN_MEMORY)
    return text


def _disk(text: str) -> str:
    parse_size(text, minimum=MIN_DISK)
    return text


def _as_text(value: object) -> object:
    """A bare YAML number reaches the size check (and its "no unit" message) as text."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


MemorySize = Annotated[str, BeforeValidator(_as_text), AfterValidator(_memory)]
DiskSize = Annotated[str, BeforeValidator(_as_text), AfterValidator(_disk)]


class Limits(BaseModel):
    """What a session may use, each below the deployment's own limit
    (`BALLET_SESSION_MAX_MEMORY`, `_DISK`, `_PROCESSES`, `_CPUS`); a value above it is
    lowered to it when the session runs, and the session's log and report say so."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    memory: MemorySize | None = None
    """RAM of the session's processes, with a unit: `512MiB`, `4GiB` (`GB`, `MB`: powers
    of 1000). Over it the kernel kills the largest of them (failure reason `memory`)."""
    disk: DiskSize | None = None
    """What the clone, HOME and /tmp may hold together, e.g. `2GiB`; a write beyond it
    fails with "no space left on device" (failure reason `disk`)."""
    processes: int | None = Field(default=None, ge=MIN_PROCESSES)
    """Processes and threads at once; a fork beyond it fails (failure reason `processes`)."""
    cpus: float | None = Field(default=None, ge=MIN_CPUS, le=MAX_CPUS)
    """Cores' worth of CPU time, e.g. `0.5` or `2`; beyond it the session is slowed, not
    stopped (a session that runs out of time while held to it fails with `cpu`)."""


@dataclass(frozen=True)
class LimitValues:
    """Limits in the kernel's units; None: no limit of this kind."""

    memory: int | None = None  # bytes
    disk: int | None = None  # bytes
    processes: int | None = None
    cpus: float | None = None  # cores

    def describe(self, name: LimitName) -> str:
        value = getattr(self, name)
        if value is None:
            return "none"
        if name in ("memory", "disk"):
            return format_size(value)
        if name == "cpus":
            return f"{value:g} core" + ("" if value == 1 else "s")
        return str(value)

    def summary(self) -> str:
        """`memory 4 GiB, disk 8 GiB, processes 512, cpus 1 core`."""
        return ", ".join(f"{name} {self.describe(name)}" for name in LIMIT_NAMES)


def limit_values(limits: Limits | None) -> LimitValues:
    """`.ballet.yml`'s `limits:` in the kernel's units (validated already)."""
    if limits is None:
        return LimitValues()
    return LimitValues(
        memory=parse_size(limits.memory) if limits.memory else None,
        disk=parse_size(limits.disk) if limits.disk else None,
        processes=limits.processes,
        cpus=limits.cpus,
    )


def lowered(own: Limits | None, by: Limits | None) -> Limits | None:
    """`own` (a runtime's) lowered by `by` (an agent stage's): each limit the lower of
    the two that are set, in the words of the one it came from."""
    if by is None:
        return own
    if own is None:
        return by
    mine, theirs = limit_values(own), limit_values(by)
    chosen: dict[str, object] = {}
    for field in fields(LimitValues):
        name = field.name
        a, b = getattr(mine, name), getattr(theirs, name)
        pick = by if a is None or (b is not None and b < a) else own
        chosen[name] = getattr(pick, name)
    return Limits.model_validate(chosen)


@dataclass(frozen=True)
class Effective:
    """What one session runs with, and what was said about it (for its log and report)."""

    values: LimitValues
    notes: tuple[str, ...] = ()


def effective_limits(deployment: LimitValues, asked: Limits | None) -> Effective:
    """The deployment's limits, lowered where `.ballet.yml` asks for less. A value
    above the deployment's is clamped to it, with a note; one this worker cannot
    enforce at all (the deployment's is None) runs unlimited, with a note."""
    wanted = limit_values(asked)
    values = deployment
    notes: list[str] = []
    for name in LIMIT_NAMES:
        mine, theirs = getattr(deployment, name), getattr(wanted, name)
        if theirs is None:
            continue
        written = getattr(asked, name)
        if mine is None:
            notes.append(
                f"`limits: {name}: {written}` in .ballet.yml is not enforced: this worker "
                f"cannot limit {name} (docs/security.md, Resource limits)"
            )
        elif theirs > mine:
            notes.append(
                f"`limits: {name}: {written}` in .ballet.yml is above this deployment's "
                f"{deployment.describe(name)}, so the session ran with "
                f"{deployment.describe(name)} (only the operator can raise it: "
                f"BALLET_SESSION_MAX_{name.upper()})"
            )
        else:
            values = replace(values, **{name: theirs})
    return Effective(values, tuple(notes))
