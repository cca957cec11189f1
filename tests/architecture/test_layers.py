"""The house's rules, read from the source: layers, no import circle, short modules.

Every import counts, those under `if TYPE_CHECKING:` too: a type-only import
that runs back up the layers is the same tangle for the reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
MAX_LINES = 400

# Bottom to top: a module may import its own layer and those below it, never above.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),  # pure: the machine, the config, events and effects
    (
        "",
        "settings",
        "logs",
        "metrics",
        "queue",
        "embedded_valkey",
        "skills",
        "sandbox",
        "sessionlog",  # a session's log: redaction, steps, the sink
        "pricing",  # model prices (genai-prices)
        "spend_ledger",  # model spend per month, in Redis
    ),
    ("sessions",),  # one agent session, confined; knows no ticket store
    ("github",),  # the GitHub App's client, REST adapter, translator and models
    ("tickets",),  # the ticket's record, lock and service above the forge
    ("jobs",),  # what the worker runs
    ("web", "watch", "setup", "stats"),  # the web app, its pages, the setup flow
    ("wiring",),  # the composition root
    ("demo",),
    ("commands", "cli", "__main__"),
)
LAYER_OF = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def modules() -> dict[str, Path]:
    found = {}
    for path in (APP / "ballet").rglob("*.py"):
        parts = list(path.relative_to(APP).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        yield from (t for t in targets if t in known and t != name)


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imports_of(name, path, known)) for name, path in known.items()}


def area(module: str) -> str:
    """`ballet.tickets.store` -> `tickets`; the package root itself -> ``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_area_has_a_layer() -> None:
    unplaced = {area(m) for m in modules()} - set(LAYER_OF)
    assert not unplaced, f"put these in LAYERS: {sorted(unplaced)}"


def test_no_import_circle() -> None:
    assert cycles(graph()) == []


def test_no_import_runs_up_the_layers() -> None:
    upward = [
        f"{m} -> {t}"
        for m, targets in graph().items()
        for t in targets
        if LAYER_OF[area(t)] > LAYER_OF[area(m)]
    ]
    assert upward == []


def test_job_modules_share_types_only_through_the_bottom() -> None:
    """`jobs.services` is what every job imports; it must import no job back."""
    bottom = {
        "ballet.jobs.services",
        "ballet.jobs.artifacts",
        "ballet.jobs.heartbeats",
        "ballet.jobs.redelivery",
        "ballet.jobs.prefetch",
    }
    edges = graph()
    for module in bottom:
        climbing = {t for t in edges[module] if area(t) == "jobs" and t not in bottom}
        assert not climbing, f"{module} imports {climbing}"


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_reads_in_one_sitting(name: str) -> None:
    lines = len(modules()[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split what it owns"


def test_the_checker_sees_a_circle_and_a_climb() -> None:
    """The rules above could fail: a made-up graph with both faults is caught."""
    edges = {"ballet.jobs.a": {"ballet.jobs.b"}, "ballet.jobs.b": {"ballet.jobs.a"}}
    assert cycles(edges) == [["ballet.jobs.a", "ballet.jobs.b"]]
    assert LAYER_OF[area("ballet.wiring")] > LAYER_OF[area("ballet.tickets.store")]
