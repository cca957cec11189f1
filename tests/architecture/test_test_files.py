"""Every test file has a name of its own: pytest imports them by their base names
(rootdir-relative packages are not used), so a second `test_x.py` anywhere stops the
whole run's collection with an import mismatch, and CI fails on the stop."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_name() -> None:
    by_name: defaultdict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        by_name[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"rename one of each: {shared}"
