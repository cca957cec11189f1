"""`ballet schema`: the JSON Schema of `.ballet.yml`, generated from the models.

The same text is committed as docs/ballet.schema.json, for editors
(`# yaml-language-server: $schema=...`) and for readers of the format.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ballet.core.config import BalletConfig

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def config_schema() -> dict[str, Any]:
    schema = BalletConfig.model_json_schema()
    schema["title"] = ".ballet.yml"
    return {"$schema": SCHEMA_DIALECT, **schema}


def render_schema() -> str:
    return json.dumps(config_schema(), indent=2, sort_keys=True) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", type=Path, metavar="PATH", help="write the schema to PATH instead of stdout"
    )


def run(args: argparse.Namespace) -> int:
    text = render_schema()
    if args.output is None:
        print(text, end="")
        return 0
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as error:
        print(f"ballet schema: cannot write {args.output}: {error.strerror}; choose another path")
        return 2
    print(f"wrote {args.output}")
    return 0
