"""docs/runtimes.md's table of the variables Ballet sets is the code's table
(core/runtime_env.py): every variable in a row naming what becomes of it declared."""

from __future__ import annotations

import re
from pathlib import Path

from ballet.core.runtime_env import ADAPTERS, SESSION

DOC = Path(__file__).resolve().parents[2] / "docs" / "runtimes.md"


def rows() -> list[list[str]]:
    text = DOC.read_text()
    table = text[text.index("**Variables Ballet sets.**") :].split("\n\n")[1]
    return [
        [cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]
    ]


def first_word(text: str) -> str:
    return re.findall(r"\w+", text)[0]


def test_every_variable_ballet_sets_has_its_row_saying_what_becomes_of_it() -> None:
    documented = {
        name.strip(" `"): (scope, first_word(declared))
        for names, scope, _, declared in rows()
        for name in names.split(",")
    }
    expected = {
        v.name: ("every confined session" if v.by_confinement else "every session", v.declared)
        for v in SESSION
    }
    for adapter, variables in ADAPTERS.items():
        for v in variables:
            expected[v.name] = (
                f"{adapter} with `base_url`" if v.with_base_url else adapter,
                v.declared,
            )
    assert documented == expected
