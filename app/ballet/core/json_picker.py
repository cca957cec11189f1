"""Pick a few values out of a JSON text that arrives in pieces, keeping nothing else.

A provider's answer may be megabytes (a long completion, a Responses stream's
last event repeating the whole output) while the meter needs only its `usage`
object and model name. `JsonPicker` follows the text's structure as bytes
arrive and keeps only the values found at the paths it is given, each up to a
bound; the text around them is read and forgotten. Strings, where the bulk of
an answer is, are skipped with a regular expression, not byte by byte.

A path is a tuple of object keys, `ANY_ITEM` standing for any item of an
array: `("usage",)`, `("response", "usage")`, `(ANY_ITEM, "usageMetadata")`.
Where a path occurs more than once (the items of an array), the last value
wins. The reader is lenient (a trailing comma passes) but text that is not
JSON stops it, and it never raises: what was picked before stays.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from typing import Final

Path = tuple[str, ...]
ANY_ITEM: Final = "\x00[]"  # no key a provider sends; stands for an array's items

# What is kept: a picked value (a usage object is a few hundred bytes), a key,
# and how deep the text may nest (a provider's answer is a dozen levels).
VALUE_BOUND = 64 * 1024
KEY_BOUND = 256
DEPTH_BOUND = 512

# A string's bytes up to its closing quote, escaped pairs included (or up to a
# backslash that ends the piece). Possessive: a backtracking regex would keep a
# stack entry per escape (1.7 MB for a 64 KiB piece of escapes).
_STRING_BODY = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+', re.DOTALL)
_SCALAR_STOP = re.compile(rb"[,\]}\s]")
_SPACE = re.compile(rb"[ \t\r\n]*")

# What the next significant byte may be.
_VALUE, _AFTER_VALUE, _KEY, _COLON, _STRING, _SCALAR, _DONE, _FAILED = range(8)
_QUOTE, _BACKSLASH, _COMMA, _COLON_BYTE = b'"\\,:'
_OPEN_OBJECT, _CLOSE_OBJECT, _OPEN_ARRAY, _CLOSE_ARRAY = b"{}[]"


class JsonPicker:
    """Reads one JSON text fed in pieces; `picked` maps each path found to its value."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self._paths = frozenset(paths)
        self.picked: dict[Path, object] = {}
        self._state = _VALUE
        self._containers = bytearray()  # `{` or `[` per open container
        self._path: list[str] = []  # per open container: its current key, or ANY_ITEM
        self._in_key = False  # the string being read is an object's key
        self._escaped = False  # a string's backslash ended the last piece
        self._key = bytearray()
        self._capture: bytearray | None = None  # the picked value being read
        self._capture_depth = 0
        self._capture_path: Path = ()
        self._capture_from = 0  # where, in the piece being read, its unkept bytes begin

    @property
    def done(self) -> bool:
        """The text's value ended, or the text is not JSON: nothing more is read."""
        return self._state in (_DONE, _FAILED)

    def feed(self, chunk: bytes) -> None:
        if self.done or not chunk:
            return
        self._capture_from = 0
        i, n = 0, len(chunk)
        while i < n and not self.done:
            if self._state == _STRING:
                i = self._string(chunk, i)
            elif self._state == _SCALAR:
                found = _SCALAR_STOP.search(chunk, i)
                i = n if found is None else found.start()
                if found is not None:
                    self._value_ended(chunk, i)
            else:
                space = _SPACE.match(chunk, i)
                i = space.end() if space else i
                if i < n:
                    i = self._structural(chunk, i)
        self._keep(chunk, min(i, n))

    # -- the states ------------------------------------------------------------------

    def _structural(self, chunk: bytes, i: int) -> int:
        """Reads the significant byte at `i` outside strings and scalars; returns where
        reading goes on."""
        byte, state = chunk[i], self._state
        if state == _VALUE:
            if byte == _CLOSE_ARRAY and self._containers[-1:] == b"[":
                self._close(chunk, i)  # `[]`, or a trailing comma
                return i + 1
            if byte in b"}],:":
                self._state = _FAILED
                return i
            if self._capture is None and tuple(self._path) in self._paths:
                self._capture = bytearray()
                self._capture_depth = len(self._containers)
                self._capture_path = tuple(self._path)
                self._capture_from = i
            if byte in (_OPEN_OBJECT, _OPEN_ARRAY):
                self._open(byte)
                return i + 1
            if byte == _QUOTE:
                self._state, self._in_key = _STRING, False
                return i + 1
            self._state = _SCALAR
            return i
        if state == _KEY:
            if byte == _QUOTE:
                self._state, self._in_key = _STRING, True
                self._key.clear()
            elif byte == _CLOSE_OBJECT:
                self._close(chunk, i)  # `{}`, or a trailing comma
            else:
                self._state = _FAILED
            return i + 1
        if state == _COLON:
            self._state = _VALUE if byte == _COLON_BYTE else _FAILED
            return i + 1
        # After a value: a comma, or its container's end.
        top = self._containers[-1]
        if byte == _COMMA:
            self._state = _KEY if top == _OPEN_OBJECT else _VALUE
        elif (byte, top) in ((_CLOSE_OBJECT, _OPEN_OBJECT), (_CLOSE_ARRAY, _OPEN_ARRAY)):
            self._close(chunk, i)
        else:
            self._state = _FAILED
        return i + 1

    def _string(self, chunk: bytes, i: int) -> int:
        n = len(chunk)
        if self._escaped:  # the last piece ended with a backslash: this byte is escaped
            self._escaped = False
            self._key_add(chunk[i : i + 1])
            i += 1
        body = _STRING_BODY.match(chunk, i)
        end = body.end() if body else i
        if self._in_key:  # a value's string, the bulk of an answer, is not copied
            self._key_add(chunk[i:end])
        if end >= n:
            return n
        if chunk[end] == _BACKSLASH:  # the piece's last byte
            self._key_add(b"\\")
            self._escaped = True
            return n
        if self._in_key:  # the closing quote
            self._path[-1] = self._key_text()
            self._state = _COLON
        else:
            self._value_ended(chunk, end + 1)
        return end + 1

    # -- containers and values -------------------------------------------------------

    def _open(self, byte: int) -> None:
        if len(self._containers) >= DEPTH_BOUND:
            self._state = _FAILED
            return
        self._containers.append(byte)
        self._path.append("" if byte == _OPEN_OBJECT else ANY_ITEM)
        self._state = _KEY if byte == _OPEN_OBJECT else _VALUE

    def _close(self, chunk: bytes, i: int) -> None:
        del self._containers[-1]
        self._path.pop()
        self._value_ended(chunk, i + 1)

    def _value_ended(self, chunk: bytes, end: int) -> None:
        """A value ended just before `end`; a picked one is parsed when it is whole."""
        self._state = _AFTER_VALUE if self._containers else _DONE
        if self._capture is None or len(self._containers) != self._capture_depth:
            return
        self._keep(chunk, end)
        captured, self._capture = self._capture, None
        if len(captured) <= VALUE_BOUND:
            with contextlib.suppress(ValueError):
                self.picked[self._capture_path] = json.loads(captured)

    def _keep(self, chunk: bytes, end: int) -> None:
        """Adds the capture's bytes of this piece up to `end` (nothing past the bound)."""
        capture = self._capture
        if capture is not None and len(capture) <= VALUE_BOUND:
            capture += chunk[self._capture_from : end]
        self._capture_from = end

    def _key_add(self, part: bytes) -> None:
        if self._in_key and len(self._key) <= KEY_BOUND:
            self._key += part[: KEY_BOUND + 1 - len(self._key)]  # one past: "too long"

    def _key_text(self) -> str:
        raw = bytes(self._key)
        if len(raw) > KEY_BOUND:
            return ""  # no key of a path is that long
        if b"\\" not in raw:
            return raw.decode("utf-8", "replace")
        try:
            text: object = json.loads(b'"' + raw + b'"')
        except ValueError:
            return ""
        return text if isinstance(text, str) else ""


def pick_from(value: object, paths: Iterable[Path]) -> dict[Path, object]:
    """What `JsonPicker` picks, from a value already parsed (a small event's data)."""
    picked: dict[Path, object] = {}
    for path in paths:
        found = _walk(value, path)
        if found is not _MISSING:
            picked[path] = found
    return picked


_MISSING = object()


def _walk(value: object, path: Path) -> object:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if head == ANY_ITEM:
        if not isinstance(value, list):
            return _MISSING
        found = (_walk(item, rest) for item in reversed(value))
        return next((f for f in found if f is not _MISSING), _MISSING)
    if isinstance(value, dict) and head in value:
        return _walk(value[head], rest)
    return _MISSING
