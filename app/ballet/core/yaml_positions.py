"""YAML text to plain Python values, remembering where every node was written.

`yaml.safe_load` forgets positions, so an error found later (by pydantic or by
a pipeline rule) could not point at its line. Here the text is composed into
nodes (which carry marks) and converted by hand, recording for each path
(`("pipelines", "default", "stages", 0, "id")`) the 1-based line and column of
the value and of its key. Conversion also refuses what `safe_load` would
accept silently: duplicate keys, and aliases that expand without bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

Path = tuple[str | int, ...]
Position = tuple[int, int]  # (line, column), both 1-based

# A billion-laughs document is small on disk and huge once its aliases are
# expanded. A real .ballet.yml has a few hundred nodes; this is far above it.
MAX_EXPANDED_NODES = 50_000


class YamlProblem(Exception):
    """The text is not YAML Ballet can read; `position` says where."""

    def __init__(self, message: str, position: Position) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


@dataclass
class Document:
    value: Any
    value_at: dict[Path, Position] = field(default_factory=dict)
    key_at: dict[Path, Position] = field(default_factory=dict)

    def position(self, path: Path, *, key: bool = False) -> Position:
        """Where `path` was written, or its nearest written ancestor (for missing keys)."""
        for end in range(len(path), -1, -1):
            prefix = path[:end]
            if key and prefix in self.key_at:
                return self.key_at[prefix]
            if prefix in self.value_at:
                return self.value_at[prefix]
        return (1, 1)


def _at(mark: yaml.Mark) -> Position:
    return (mark.line + 1, mark.column + 1)


def load(text: str) -> Document:
    """Compose `text` (one document) into values with positions, or raise YamlProblem."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        position = _at(mark) if mark else (1, 1)
        raise YamlProblem(
            f"YAML syntax error: {error.problem or error}; fix the text here "
            "(indentation, quotes, brackets; one document only)",
            position,
        ) from None
    except yaml.YAMLError as error:  # e.g. a control character the reader refuses
        raise YamlProblem(
            f"the file is not readable YAML ({error}); save it as plain UTF-8 text", (1, 1)
        ) from None
    document = Document(value=None)
    if root is None:
        return document
    converter = _Converter(document)
    document.value = converter.convert(root, ())
    return document


class _Converter:
    def __init__(self, document: Document) -> None:
        self.document = document
        self.expanded = 0
        self.open: set[int] = set()  # ids of nodes being converted: a repeat is a cycle
        self.scalars = yaml.constructor.SafeConstructor()

    def convert(self, node: yaml.Node, path: Path) -> Any:
        self.expanded += 1
        if self.expanded > MAX_EXPANDED_NODES:
            raise YamlProblem(
                f"the document expands to more than {MAX_EXPANDED_NODES} nodes through "
                "aliases (*name); write the values out instead of nesting aliases",
                # The alias's own mark is lost in composing: name the top-level key.
                self.document.key_at.get(path[:1], _at(node.start_mark)),
            )
        self.document.value_at.setdefault(path, _at(node.start_mark))
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if id(node) in self.open:
            raise YamlProblem(
                "an alias refers to the node that contains it; write the value out instead",
                _at(node.start_mark),
            )
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
            assert isinstance(node, yaml.MappingNode)
            return self._mapping(node, path)
        finally:
            self.open.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        try:
            return self.scalars.construct_object(node)
        except (yaml.YAMLError, ValueError):  # an unknown `!tag`, `<<`, or a date like 2024-13-45
            if node.tag == "tag:yaml.org,2002:merge":
                raise YamlProblem(
                    "YAML merge keys (`<<`) are not supported; write the keys out",
                    _at(node.start_mark),
                ) from None
            raise YamlProblem(
                f"cannot read `{node.value}` as {node.tag.rsplit(':', 1)[-1]}; "
                "write plain text, quoted if needed, without `!tags` or `<<`",
                _at(node.start_mark),
            ) from None

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlProblem(
                    "a key must be a plain word, not a list or a mapping; write `name: value`",
                    _at(key_node.start_mark),
                )
            key = self._scalar(key_node)
            if key in result:
                raise YamlProblem(
                    f"duplicate key `{key}`; keep one `{key}:` entry in this mapping",
                    _at(key_node.start_mark),
                )
            child = (*path, key)
            self.document.key_at.setdefault(child, _at(key_node.start_mark))
            result[key] = self.convert(value_node, child)
        return result
