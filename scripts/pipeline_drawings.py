"""Draw the pipelines docs/architecture.md shows, as a ticket's page draws them.

python scripts/pipeline_drawings.py          # rewrite docs/images/pipeline-*.svg
python scripts/pipeline_drawings.py --check  # exit 1 if one is out of date

The drawings come from watch/pipeline_layout.py and the page's own SVG template,
for the default pipeline and for one with phases, a sign-off and a person's stage.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from ballet.core.config import ResolvedPipeline, Runtime
from ballet.core.events import TicketRequested
from ballet.core.machine import advance
from ballet.core.resolve import default_config, resolve_pipeline
from ballet.core.validate import parse_config
from ballet.watch.pipeline_layout import drawing
from ballet.watch.render import environment

IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"
WITH_PHASES = """\
runtimes:
  claude: {adapter: claude-code, env: [ANTHROPIC_API_KEY]}
  codex: {adapter: codex, env: [OPENAI_API_KEY]}
default_runtime: claude
roles:
  security: {runtime: codex, instructions: "Review for security."}
pipelines:
  default:
    signoffs: [security]
    stages:
      - {id: implement, kind: agent, phases: [research, plan, implement, verify],
         next: {done: review}}
      - {id: review, kind: agent, runtime: codex,
         next: {approve: verify, changes_requested: implement}}
      - {id: verify, kind: agent, next: {pass: approval, fail: implement}}
      - {id: approval, kind: human, next: {approve: integrate, reject: implement}}
      - {id: integrate, kind: platform, action: merge, next: {merged: $done, returned: implement}}
"""


def pipelines() -> dict[str, ResolvedPipeline]:
    claude = Runtime(adapter="claude-code", env=("ANTHROPIC_API_KEY",))
    config = parse_config(WITH_PHASES)
    assert not isinstance(config, list), config
    return {
        "pipeline-default.svg": resolve_pipeline(default_config(claude), ()),
        "pipeline-with-phases.svg": resolve_pipeline(config, ()),
    }


def render(pipeline: ResolvedPipeline) -> str:
    """The pipeline as a ticket's page draws it, for a ticket not yet at any stage."""
    requested = TicketRequested(
        now=datetime(2026, 1, 1, tzinfo=UTC),
        repo="owner/repo",
        issue=1,
        author="someone",
        title="",
        pipeline=pipeline,
        default_branch="main",
    )
    record, _ = advance(None, requested)
    record = record.model_copy(update={"stage": None, "phase": None, "history": ()})
    svg = environment().get_template("pipeline_drawing.svg").render(drawing=drawing(record))
    return svg.strip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a drawing is out of date")
    args = parser.parse_args(argv)
    stale = []
    for name, pipeline in pipelines().items():
        path, text = IMAGES / name, render(pipeline)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
            continue
        path.write_text(text)
        print(f"wrote {path}")
    for path in stale:
        print(f"{path} is out of date: run python scripts/pipeline_drawings.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
