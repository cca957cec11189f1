"""Helpers for the `.ballet.yml` tests: parse text and read back its single error.

Not a conftest.py: several test folders have one, and importing helpers from
"conftest" would pick whichever was imported first.
"""

from __future__ import annotations

from pathlib import Path

from ballet.core.config import BalletConfig
from ballet.core.validate import ConfigError, parse_config

HERE = Path(__file__).parent
DESIGN_EXAMPLE = HERE / "design_example.yml"


def valid(text: str, **kwargs: object) -> BalletConfig:
    result = parse_config(text, **kwargs)  # type: ignore[arg-type]
    assert isinstance(result, BalletConfig), "\n".join(map(str, result))
    return result


def only_error(text: str, **kwargs: object) -> ConfigError:
    result = parse_config(text, **kwargs)  # type: ignore[arg-type]
    assert isinstance(result, list), "the text was accepted"
    assert len(result) == 1, "\n".join(map(str, result))
    return result[0]
