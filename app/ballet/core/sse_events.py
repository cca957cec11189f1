"""Read the events of a `text/event-stream` answer as it passes, in bounded memory.

The model gateway relays a stream byte for byte and meters it on the way: the
meter needs the few events that carry usage, out of tens of thousands of text
deltas. `SseEvents` is fed the stream in whatever pieces the network gave and
returns, per piece, what `JsonPicker` paths found in the data of each event
that ended in it.

Cheap for the common event: the pieces between the last event boundary and the
one before are looked at as a whole, and only when they contain the needle
(`usage`: every usage key holds it) are their events split; an event's data is
parsed only when it holds a usage object (`"usage…": {`; a JSON string cannot
hold an unescaped quote, so no text delta spells it). An event past
EVENT_BOUND (a Responses stream's last event repeats the whole output) is not
kept: its data is fed to a `JsonPicker` line by line as it arrives.

Lines end with CRLF, LF or CR, as the SSE specification allows; a blank line
(two line ends in a row) ends an event.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable

from ballet.core.json_picker import JsonPicker, Path, pick_from

EVENT_BOUND = 256 * 1024
FIELD_BOUND = 16  # the field names that matter are `data` and `event`
# Every blank line holds one of these: LF or CR, then LF or CR (a CR right before
# an LF is one line end, CRLF, and no blank line is spelled CR LF alone).
_BLANK_LINES = (b"\n\n", b"\n\r", b"\r\r")
_LINE_END = re.compile(rb"[\r\n]")
_TAIL = 4096  # of a piece, searched first for its last blank line
_CR, _LF = b"\r\n"
NEEDLE = b"usage"
_FIND_NEEDLE = re.compile(NEEDLE)  # sre's literal search: faster than `in` on long pieces
_USAGE_OBJECT = re.compile(rb'"usage\w*"\s*:\s*\{')

Picked = dict[Path, object]
# A piece of the stream: bytes, or a view of the buffer it was received into (read
# before the buffer is written over: nothing of it is kept but as a copy).
Piece = bytes | memoryview
# Whether NEEDLE is in the first `end` bytes of a piece. The search costs more than all
# else the meter does to a stream of text deltas; an edge may give a faster one.
Find = Callable[[Piece, int], bool]


def find_needle(data: Piece, end: int) -> bool:
    return _FIND_NEEDLE.search(data, 0, end) is not None


class SseEvents:
    """Splits an event stream into events; `feed` returns what each ended event held."""

    def __init__(
        self, paths: Iterable[Path], event_bound: int = EVENT_BOUND, find: Find = find_needle
    ) -> None:
        self._paths = frozenset(paths)
        self._find = find
        self._event_bound = event_bound
        self._pending = bytearray()  # from the start of the event not yet ended
        self._big: _BigEvent | None = None

    def feed(self, chunk: Piece, needle_absent: bool = False) -> list[Picked]:
        """`needle_absent`: the caller searched a span holding all of `chunk` and found no
        NEEDLE in it (a spliced round's whole copy), so `chunk` is not searched again."""
        found: list[Picked] = []
        while chunk:
            if self._big is not None:
                rest = self._big.feed(bytes(chunk))
                if rest is None:
                    return found
                if self._big.picker.picked:
                    found.append(self._big.picker.picked)
                self._big, chunk = None, rest
                continue
            chunk = self._feed_small(chunk, found, needle_absent)
        return found

    def _feed_small(self, piece: Piece, found: list[Picked], absent: bool) -> bytes:
        """Adds `piece` to the events being kept; returns what is left for a big event.

        Whole events, as servers flush them, are searched for the needle where they lie
        and copied only to be read; of any other piece, what follows its last blank line
        is kept."""
        pending = self._pending
        if not pending and piece[-2:] in _BLANK_LINES:
            if not absent and self._find(piece, len(piece)):
                found.extend(self._events(bytes(piece)))
            return b""
        end = _past_last_blank_line(piece)
        if not end and pending[-1:] + piece[:1] in _BLANK_LINES:
            end = 1  # a blank line across the pieces
        if end > 0:
            seam = pending[-len(NEEDLE) + 1 :] + piece[: len(NEEDLE) - 1]
            if NEEDLE in pending or NEEDLE in seam or (not absent and self._find(piece, end)):
                found.extend(self._events(bytes(pending) + bytes(piece[:end])))
            pending.clear()
        pending += piece[end:]
        if len(pending) <= self._event_bound:
            return b""
        self._big = _BigEvent(self._paths)
        rest = bytes(pending)
        pending.clear()
        return rest

    def _events(self, ended: bytes) -> list[Picked]:
        found: list[Picked] = []
        data: list[bytes] = []
        for line in ended.splitlines():
            if not line:
                if data:
                    found.append(self._read(b"\n".join(data)))
                data = []
                continue
            field, _, value = line.partition(b":")
            if field == b"data":
                data.append(value[1:] if value[:1] == b" " else value)
        return [picked for picked in found if picked]

    def _read(self, data: bytes) -> Picked:
        if not _USAGE_OBJECT.search(data):
            return {}
        try:
            value = json.loads(data)
        except ValueError:  # `[DONE]`, or not JSON at all
            return {}
        return pick_from(value, self._paths)


def _past_last_blank_line(piece: Piece) -> int:
    """Where what follows the piece's last blank line starts (0: it holds none). Its tail
    is looked at first: a view is copied in part, not whole, when its events are small."""
    for start in (max(0, len(piece) - _TAIL), 0):
        tail = piece if not start and type(piece) is bytes else bytes(piece[start:])
        last = tail.rfind(b"\n\n")
        if b"\r" in tail:  # the CR forms only where there is a CR: one pass, not two
            last = max(last, tail.rfind(b"\n\r"), tail.rfind(b"\r\r"))
        if last >= 0:
            return start + last + 2
        if not start:
            break
    return 0


class _BigEvent:
    """One event too big to keep, read line by line: its data goes to a JsonPicker."""

    def __init__(self, paths: frozenset[Path]) -> None:
        self.picker = JsonPicker(paths)
        self._line_start = True
        self._field = bytearray()
        self._in_value = False  # past the line's colon
        self._skip_space = False  # the value's first byte, if a space, is not the value's
        self._cr = False  # the last piece ended with CR: an LF next ends no other line

    def feed(self, chunk: bytes) -> bytes | None:
        """Reads `chunk`; returns what follows the event's end, or None if it goes on."""
        i, n = 0, len(chunk)
        while i < n:
            if self._cr:
                self._cr = False
                if chunk[i] == _LF:
                    i += 1
                    continue
            if self._line_start:
                if chunk[i] in (_CR, _LF):  # a blank line: the event ended
                    return chunk[i + 1 :]
                self._line_start, self._in_value = False, False
                self._field.clear()
            found = _LINE_END.search(chunk, i)
            end = n if found is None else found.start()
            self._read_line_part(chunk[i:end])
            if found is None:
                return None
            if self._field == b"data":
                self.picker.feed(b"\n")  # data lines are joined by LF: JSON's whitespace
            self._line_start = True
            if chunk[end] == _CR:
                if end + 1 == n:
                    self._cr = True
                elif chunk[end + 1] == _LF:
                    end += 1
            i = end + 1
        return None

    def _read_line_part(self, part: bytes) -> None:
        if not self._in_value:
            colon = part.find(b":")
            name = part if colon < 0 else part[:colon]
            if len(self._field) + len(name) <= FIELD_BOUND:
                self._field += name
            else:
                self._field[:] = b"-"  # no field that matters
            if colon < 0:
                return
            self._in_value, self._skip_space = True, True
            part = part[colon + 1 :]
        if part and self._skip_space:
            self._skip_space = False
            part = part[1:] if part[:1] == b" " else part
        if part and self._field == b"data":
            self.picker.feed(part)
