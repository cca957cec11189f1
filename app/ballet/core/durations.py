"""Durations as people read them: to the millisecond under a second, then coarser.

One wording for every place a person reads a duration — the ticket's pages and
the tracking comment on GitHub — so a 340 ms session is never "0m 00s" in one
and "340 ms" in the other.
"""

from __future__ import annotations


def spoken(seconds: float) -> str:
    """`340 ms`, `4.2 s`, `42 s`, `3m 05s`, `2h 05m`, `3d 04h`."""
    seconds = max(seconds, 0.0)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, whole = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {whole:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours:02d}h"
