"""Which limit a failed session ran into, from the kernel's own counters, and what
to do about it: the failure's reason and the words of its report.

A session that failed (no valid report, or out of time) and was stopped by a
limit failed *because of* it: the OOM kills of its memory cgroup, the forks
its pids cgroup refused, its tmpfs found full, or its time spent held back by
its CPU quota say so, never a guess from an exit code. In that order: a kill is
the most certain, a slow session the least.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ballet.core.session_limits import LimitValues, format_size
from ballet.sessions.confine.limits import THROTTLED_SHARE, LimitUsage

LimitReason = Literal["memory", "processes", "disk", "cpu"]


@dataclass(frozen=True)
class LimitVerdict:
    reason: LimitReason
    message: str


def _raise(variable: str, key: str) -> str:
    return (
        f"or raise the limit: the deployment's {variable}, and `limits: {key}:` in "
        ".ballet.yml (on the runtime or the stage) up to it"
    )


def limit_verdict(
    values: LimitValues,
    usage: LimitUsage,
    *,
    timed_out: bool,
    timeout_seconds: float,
    disk_in_memory: bool = False,
) -> LimitVerdict | None:
    """The limit a failed session ran into, or None when none stopped it."""
    counters = usage.counters
    if values.memory is not None and (counters.oom_kills or usage.ended_for == "memory"):
        peak = (
            f" (at most {format_size(counters.memory_peak)} in use)" if counters.memory_peak else ""
        )
        ended = (
            "; Ballet ended the session, which kept going over it"
            if usage.ended_for == "memory"
            else ""
        )
        files = (
            " What it writes to its disk counts too: the disk is memory on this worker."
            if disk_in_memory
            else ""
        )
        return LimitVerdict(
            "memory",
            f"the kernel killed {counters.oom_kills} of its processes for going over its "
            f"memory limit of {format_size(values.memory)}{peak}{ended}.{files} Make the "
            "agent use less memory (a smaller test run, fewer parallel jobs) "
            + _raise("BALLET_SESSION_MAX_MEMORY", "memory")
            + ".",
        )
    if values.processes is not None and (counters.fork_refusals or usage.ended_for == "processes"):
        ended = (
            "; Ballet ended the session, which kept trying"
            if usage.ended_for == "processes"
            else ""
        )
        return LimitVerdict(
            "processes",
            f"it tried to run more than {values.processes} processes and threads at once: "
            f"the kernel refused {counters.fork_refusals} forks{ended}. Make the agent "
            "start fewer (fewer parallel jobs, no runaway loop) "
            + _raise("BALLET_SESSION_MAX_PROCESSES", "processes")
            + ".",
        )
    if values.disk is not None and usage.disk_full:
        return LimitVerdict(
            "disk",
            f"its disk (the clone, HOME and /tmp together) filled up: its limit is "
            f"{format_size(values.disk)}. Make the agent write less (clean build outputs, "
            "no large downloads) " + _raise("BALLET_SESSION_MAX_DISK", "disk") + ".",
        )
    periods = counters.cpu_periods
    share = counters.cpu_throttled_periods / periods if periods else 0.0
    if values.cpus is not None and timed_out and share >= THROTTLED_SHARE:
        return LimitVerdict(
            "cpu",
            f"it ran out of its {timeout_seconds:g} s while held to its CPU limit of "
            f"{values.describe('cpus')}: throttled in {share:.0%} of its scheduling periods "
            f"({counters.cpu_throttled_seconds:.1f} s held back). Make the agent's work "
            "lighter, give the stage a longer `timeout_minutes`, "
            + _raise("BALLET_SESSION_MAX_CPUS", "cpus")
            + ".",
        )
    return None


def limit_notes(values: LimitValues, usage: LimitUsage) -> list[str]:
    """What the session's log says of its limits once it ended, whatever its result."""
    counters = usage.counters
    notes = []
    if counters.oom_kills:
        notes.append(
            f"memory: the kernel killed {counters.oom_kills} processes at the limit "
            f"({values.describe('memory')})"
        )
    if counters.fork_refusals:
        notes.append(
            f"processes: {counters.fork_refusals} forks refused at the limit "
            f"({values.describe('processes')})"
        )
    if usage.disk_full:
        notes.append(f"disk: full at the limit ({values.describe('disk')})")
    if counters.cpu_throttled_periods:
        share = counters.cpu_throttled_periods / max(1, counters.cpu_periods)
        notes.append(
            f"cpu: held to {values.describe('cpus')} in {share:.0%} of its scheduling "
            f"periods ({counters.cpu_throttled_seconds:.1f} s held back)"
        )
    return notes
