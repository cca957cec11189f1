"""The `ballet` command line: a table of subcommands, each owned by its module.

Each entry names a module exposing `add_arguments(parser)` and `run(args) -> int`.
Modules are imported only when their command runs, so `ballet validate` never
pays for uvicorn and a broken optional piece never breaks the others.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("ballet.commands.serve", "run the web app and a worker together"),
    "web": ("ballet.commands.web", "run only the webhook web app"),
    "worker": ("ballet.commands.worker", "run only a worker"),
    "validate": ("ballet.commands.validate", "check a .ballet.yml file"),
    "schema": ("ballet.commands.schema", "print the JSON Schema of .ballet.yml"),
    "stats": ("ballet.commands.stats", "per-stage runs, outcomes, durations and rework"),
    "sandbox": ("ballet.commands.sandbox", "run the GitHub double or the offline demo"),
}


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="ballet")
    parser.add_argument("--version", action="version", version=f"ballet {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(_module=module_name)
        if args_list[:1] == [name]:
            importlib.import_module(module_name).add_arguments(command)
    args = parser.parse_args(args_list)
    if not args.command:
        parser.print_help()
        return 2
    module = importlib.import_module(args._module)
    result: int = module.run(args)
    return result


def _version() -> str:
    """The installed package's version (pyproject.toml), as pip and the images know it."""
    try:
        return version("ballet")
    except PackageNotFoundError:  # run from a source tree nobody installed
        return "(not installed)"
