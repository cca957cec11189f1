"""A session's log as text a terminal cannot act on: its control characters made visible.

An agent's output is written by whatever ran in its session, so a downloaded log
read with `cat` or `less -R` would otherwise obey it: OSC 52 writes the reader's
clipboard, `ESC [2J` clears the screen, OSC 8 dresses a link as other text, a
lone carriage return lets a later line overwrite (hide) an earlier one. Every
C0 control but tab and newline, DEL, and every C1 control (U+0080–U+009F, which
some terminals obey as ESC sequences) is shown as its `\\xNN` escape instead, so
the reader sees `\\x1b]52;c;…\\x07` rather than having it done to them.

A carriage return just before a newline is kept: CRLF line ends are common and
harmless. Bytes that are not UTF-8 (a raw 0x9B is an 8-bit CSI) are shown as
`\\xNN` the same way, by the decoder. Nothing is dropped: a log that holds the
four characters `\\x1b` reads the same as one that held an ESC, which is the
point (what the reader sees is inert); applying it again changes nothing.
"""

from __future__ import annotations

import codecs
import re

# C0 but tab (09) and newline (0A); DEL; C1. A CR is matched only when no LF follows.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def visible_controls(text: str) -> str:
    """`text` with every control a terminal would act on shown as `\\xNN`."""
    return _CONTROL.sub(_escape, text)


class VisibleStream:
    """`visible_controls` over UTF-8 bytes that arrive in chunks (a download).

    A character split between chunks is decoded whole, and a CR that ends a chunk
    waits for the next one's first character to say whether it ends a CRLF."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")
        self._held = ""  # a CR at the end of the text so far

    def feed(self, chunk: bytes) -> str:
        text = self._held + self._decoder.decode(chunk)
        self._held = "\r" if text.endswith("\r") else ""
        return visible_controls(text[: len(text) - len(self._held)])

    def end(self) -> str:
        """What is left once the last chunk was fed (a held CR, a cut-off character)."""
        text = self._held + self._decoder.decode(b"", final=True)
        self._held = ""
        return visible_controls(text)
