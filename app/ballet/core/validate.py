"""`.ballet.yml` text to a `BalletConfig`, or every error with its `file:line:column`.

`parse_config` returns the config when the file may run tickets, otherwise a
non-empty list of `ConfigError`s sorted by position. It never raises for bad
input: each error names the offending node and what to write instead.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from ballet.core.config import (
    BUILTIN_SKILL_NAMES,
    ENV_NAME_PATTERN,
    REPO_PATTERN,
    STAGE_ID_PATTERN,
    BalletConfig,
)
from ballet.core.config_rules import Path, check_config
from ballet.core.pool_rules import MayUse, pool_refusals
from ballet.core.pools import POOL_PATTERN
from ballet.core.price_rules import HasPrice, config_price_problems
from ballet.core.yaml_positions import Document, YamlProblem, load

MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class ConfigError:
    file: str
    line: int  # 1-based
    column: int  # 1-based
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


def parse_config(
    text: str,
    *,
    file: str = ".ballet.yml",
    skills: Collection[str] = BUILTIN_SKILL_NAMES,
    may_use_pool: MayUse | None = None,
) -> BalletConfig | list[ConfigError]:
    """Parse and check `text`.

    `skills` are the skill names stages and roles may use; the built-in ones are
    always available, so a caller may pass only the repository's own.
    `may_use_pool`: whether the repository may use a pool (None: every pool).
    """
    size = len(text.encode("utf-8"))
    if size > MAX_FILE_BYTES:
        return _whole_file(
            file,
            f"the file is {size} bytes, over the {MAX_FILE_BYTES // 1024} KB limit; "
            "move long instructions into .ballet/skills/<name>.md",
        )
    try:
        document = load(text)
    except YamlProblem as problem:
        return [ConfigError(file, *problem.position, problem.message)]
    if document.value is None:
        return _whole_file(
            file,
            "the file is empty; define `pipelines:` (see `ballet schema`) or delete "
            "the file to use the built-in default pipeline",
        )
    if not isinstance(document.value, dict):
        return _whole_file(
            file, "the file must be a mapping of keys such as `pipelines:`; see `ballet schema`"
        )
    try:
        config = BalletConfig.model_validate(document.value)
    except ValidationError as invalid:
        return _sorted(_from_pydantic(file, document, error) for error in invalid.errors())
    problems = check_config(config, BUILTIN_SKILL_NAMES.union(skills))
    if may_use_pool is not None:
        problems += pool_refusals(config, may_use_pool)
    if not problems:
        return config
    return _sorted(
        ConfigError(file, *document.position(p.path, key=p.at_key), p.message) for p in problems
    )


def config_warnings(
    text: str, config: BalletConfig, *, has_price: HasPrice, file: str = ".ballet.yml"
) -> list[ConfigError]:
    """What a valid file (`parse_config` accepted `text` as `config`) may not do as its
    writer expects: each message starts `warning: `; tickets still run."""
    problems = config_price_problems(config, has_price)
    if not problems:
        return []
    document = load(text)
    return _sorted(
        ConfigError(file, *document.position(p.path, key=p.at_key), p.message) for p in problems
    )


def _whole_file(file: str, message: str) -> list[ConfigError]:
    return [ConfigError(file, 1, 1, message)]


def _sorted(errors: typing.Iterable[ConfigError]) -> list[ConfigError]:
    return sorted(set(errors), key=lambda e: (e.line, e.column, e.message))


def _dotted(path: Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "the file"


def _from_pydantic(file: str, document: Document, error: ErrorDetails) -> ConfigError:
    loc: Path = tuple(error["loc"])
    on_key = bool(loc) and loc[-1] == "[key]"
    if on_key:
        loc = loc[:-1]
    kind = error["type"]
    if kind == "extra_forbidden":
        message = _unknown_key(loc)
        on_key = True
    elif kind == "missing":
        message = f"{_dotted(loc[:-1])}: missing required key `{loc[-1]}`; add `{loc[-1]}: …`"
    elif kind in _BOUNDS:
        bound = error.get("ctx", {})[_BOUNDS[kind][0]]
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)  # `cost_usd: 0` is refused as "above 0", not "above 0.0"
        message = f"{_dotted(loc)}: {error['msg']}; write a number {_BOUNDS[kind][1]} {bound}"
    else:
        pattern = str(error.get("ctx", {}).get("pattern"))
        hint = _HINTS.get(kind) or _PATTERN_HINTS.get(pattern, "")
        # Model class names mean nothing in a YAML file.
        text = re.sub(r" or instance of \w+", "", error["msg"])
        message = f"{_dotted(loc)}: {text}" + (f"; {hint}" if hint else "")
    return ConfigError(file, *document.position(loc, key=on_key), message)


_HINTS = {
    "string_type": "write text, quoted if it looks like a number, date or yes/no/on/off/true/false",
    "int_type": "write a whole number",
    "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "float_type": "write a number",
    "float_parsing": "write a number",
    "bool_type": "write true or false",
    "bool_parsing": "write true or false",
    "tuple_type": "write a list, e.g. `[a, b]`",
    "list_type": "write a list, e.g. `[a, b]`",
    "dict_type": "write a mapping of `key: value` entries",
    "model_type": "write a mapping of `key: value` entries",
    "model_attributes_type": "write a mapping of `key: value` entries",
}
_PATTERN_HINTS = {  # by the field's pattern (config.py)
    STAGE_ID_PATTERN: (
        "write a lowercase letter, then up to 39 lowercase letters, digits, `-` or `_`"
    ),
    ENV_NAME_PATTERN: (
        "write an environment variable name: letters, digits and `_`, not starting with a digit"
    ),
    REPO_PATTERN: "write a repository as `owner/name`, e.g. `acme/api`",
    POOL_PATTERN: "write a pool name: a lowercase letter, then up to 31 lowercase letters, "
    "digits or `-`",
}
# Range errors name the bound to write within, e.g. "write a number of at most 20".
_BOUNDS = {
    "less_than_equal": ("le", "of at most"),
    "greater_than_equal": ("ge", "of at least"),
    "greater_than": ("gt", "above"),
}


def _unknown_key(loc: Path) -> str:
    key = str(loc[-1])
    where = f" in {_dotted(loc[:-1])}" if loc[:-1] else ""
    valid = sorted(_model_at(loc[:-1]).model_fields)
    close = difflib.get_close_matches(key, valid, n=1)
    if close:
        return f"unknown key `{key}`{where}; did you mean `{close[0]}`?"
    return f"unknown key `{key}`{where}; valid keys: {', '.join(valid)}"


def _model_at(loc: Path) -> type[BaseModel]:
    """The model class whose keys live at `loc` (a path pydantic reported an extra key under)."""
    annotation: Any = BalletConfig
    # Every model below BalletConfig sits in a field (perhaps `| None`), a dict value
    # or a tuple item.
    for part in loc:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            annotation = annotation.model_fields[str(part)].annotation
            # An optional mapping (`limits: X | None`) holds its keys in X.
            if typing.get_origin(annotation) in (typing.Union, types.UnionType):
                annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        else:  # dict[str, X] or tuple[X, ...]: the part is a key or an index
            is_dict = typing.get_origin(annotation) is dict
            annotation = typing.get_args(annotation)[-1 if is_dict else 0]
    assert isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return annotation
