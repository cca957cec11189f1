"""docs/images/pipeline-*.svg are the ticket page's own drawing, current, and shown."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def test_the_committed_drawings_are_up_to_date() -> None:
    script = ROOT / "scripts" / "pipeline_drawings.py"
    result = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_each_drawing_stands_alone_and_says_itself_in_words() -> None:
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    for name, stages in (
        ("pipeline-default.svg", ["Implement", "Review", "Verify", "Integrate"]),
        ("pipeline-with-phases.svg", ["Implement", "Approval (a person approves)"]),
    ):
        root = ElementTree.parse(ROOT / "docs" / "images" / name).getroot()
        assert root.tag == f"{SVG}svg" and root.find(f"{SVG}style") is not None
        description = root.findtext(f"{SVG}desc") or ""
        assert all(stage in description for stage in stages), description
        assert f"](images/{name})" in architecture
