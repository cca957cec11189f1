"""Redaction: the secrets a session must never show, replaced before any text leaves it.

A `Redactor` knows two kinds of secret:

- **declared values**: the values of the variables the session's runtime declares
  (`env:` in `.ballet.yml`, as the worker hands them over), Ballet's own git
  token, and whatever else the caller names. Each is replaced by
  `[redacted:<NAME>]` wherever it occurs, also JSON-escaped, URL-encoded and
  base64-encoded (in any of the three alignments a longer base64 text can give
  it), and line by line for a value of several lines (a PEM key in a variable);
- **token-shaped strings** of any origin: GitHub tokens, OpenAI and Anthropic
  keys, Google API keys, AWS access key ids, Slack tokens and private-key PEM
  blocks, replaced by `[redacted:<kind>]`.

A declared value shorter than `MIN_SECRET_CHARS` (8) is **not** redacted by
value: replacing every `abc` or `1` of a log would mangle it and still hide
nothing (a value that short is no credential). It is not refused either (a
runtime may declare a harmless setting): `too_short` names such variables so
the session's log can say they are shown as they are.

Text is redacted a block of whole lines at a time (`LineRedactor`): a value
split across two of the process's writes is whole again once its line is. A
private-key block spans lines, so a `LineRedactor` remembers that it is inside
one until its END line (at most `PEM_MAX_LINES` lines).

The work is bytes in, bytes out. Most blocks hold no secret at all, so a block
is first searched once for anything that could be one (`Prefilter`): every
declared needle and a lookahead-free superset of every token pattern, in one
alternation, run by the Rust `regex` crate that pydantic-core ships (its SIMD
literal search does all of them in one pass at ~0.2 ns a byte; Python's `re`
and `bytes.__contains__` take 0.3-1 ns a byte for each needle and pattern, and
an alternation in `re` ~8). Only a block it finds something in is redacted
exactly, needle by needle and pattern by pattern, as before.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from pydantic_core import SchemaValidator, core_schema

MIN_SECRET_CHARS = 8
# A private key's PEM block: a 4096-bit RSA key is ~50 lines. A BEGIN without
# its END stops hiding lines after this many, so one stray header cannot blank
# the rest of a log.
PEM_MAX_LINES = 200
_TOKEN = rb"[A-Za-z0-9_-]"
# Kind, pattern. Each starts with a literal (the regex engine's fast prefix search),
# and each is one more pass over every byte: patterns share a pass where they can.
TOKEN_PATTERNS: tuple[tuple[str, bytes], ...] = (
    ("github-token", rb"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("github-token", rb"github_pat_[A-Za-z0-9_]{22,}"),
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic (sk-ant-): a
    # digit and a capital in 32+ characters, so `task-list-for-the-new-view` is text.
    ("sk", rb"sk-(ant-)?(?=" + _TOKEN + rb"*[0-9])(?=" + _TOKEN + rb"*[A-Z])" + _TOKEN + rb"{32,}"),
    ("google-api-key", rb"AIza[0-9A-Za-z_-]{35}"),
    ("aws-access-key", rb"A[KS]IA[0-9A-Z]{16}"),
    ("slack-token", rb"xox[abpr]-[0-9A-Za-z-]{10,}"),
)
# What the prefilter looks for in their place: the same tokens without the lookaheads
# (Rust's regex has none), so each matches wherever its pattern above does.
TOKEN_PREFILTERS: tuple[str, ...] = (
    r"gh[pousr]_[A-Za-z0-9]{36}",
    r"github_pat_[A-Za-z0-9_]{22}",
    r"sk-[A-Za-z0-9_-]{32}",  # `ant-` is four of the 32
    r"AIza[0-9A-Za-z_-]{35}",
    r"A[KS]IA[0-9A-Z]{16}",
    r"xox[abpr]-[0-9A-Za-z-]{10}",
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----",  # what `_PEM` needs on a line to act
)
PEM_BEGIN = b"-----BEGIN"
_PEM = re.compile(
    rb"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----.*?(-----END[A-Z0-9 ]*PRIVATE KEY-----|$)", re.M
)
_PEM_END = re.compile(rb"^.*?-----END[A-Z0-9 ]*PRIVATE KEY-----")
PRIVATE_KEY = b"[redacted:private-key]"


def marker(name: str) -> bytes:
    return f"[redacted:{name}]".encode()


@dataclass(frozen=True)
class _Needle:
    data: bytes
    name: str


class Redactor:
    """Built once per session from its secrets: `{name: value}` or (name, value) pairs
    (one name may have several values, e.g. the git token before and after a refresh)."""

    def __init__(
        self,
        secrets: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        *,
        tokens: bool = True,
        prefilter: bool = True,
    ) -> None:
        """`prefilter=False`: every block takes the exact pass (what tests compare to)."""
        pairs = list(secrets.items() if isinstance(secrets, Mapping) else secrets)
        self._pairs = tuple(pairs)
        self._tokens = tokens
        self._use_prefilter = prefilter
        needles, short = _needles_of(pairs, {})
        self._needles = _longest_first(needles)
        self.too_short: tuple[str, ...] = tuple(dict.fromkeys(short))
        self._patterns = (
            tuple((re.compile(p), _replacement(kind)) for kind, p in TOKEN_PATTERNS)
            if tokens
            else ()
        )
        # In the order the values came (the worker's own first, a session's token
        # last), not by length: the groups of values every session shares are then
        # the same patterns, compiled once per worker (`_validator`).
        self._prefilter = (
            Prefilter.build(list(needles), TOKEN_PREFILTERS if tokens else ())
            if prefilter
            else None
        )

    @property
    def names(self) -> tuple[str, ...]:
        """The variables redacted by value."""
        return tuple(dict.fromkeys(n.name for n in self._needles))

    @property
    def longest(self) -> int:
        """The longest needle: how far a value may reach past a cut."""
        return max((len(n.data) for n in self._needles), default=0)

    def adding(self, secrets: Mapping[str, str]) -> Redactor:
        """This redactor with more values (a token fetched later). Only the new values'
        forms are worked out and given a prefilter group of their own: the rest is
        this one's, shared (a redactor is never changed once made)."""
        known = {n.data: n.name for n in self._needles}
        fresh, short = _needles_of(secrets.items(), known)
        more = copy.copy(self)
        more._pairs = (*self._pairs, *secrets.items())
        more._needles = _longest_first({**known, **fresh})
        more.too_short = tuple(dict.fromkeys((*self.too_short, *short)))
        if fresh and self._prefilter is not None:
            more._prefilter = self._prefilter.extended(fresh)
        elif fresh and self._use_prefilter:
            more._prefilter = Prefilter.build(
                list({**known, **fresh}), TOKEN_PREFILTERS if self._tokens else ()
            )
        return more

    def redact(self, text: str) -> str:
        """Any text (a report's field, a message): every secret replaced."""
        if not text:
            return text
        data = text.encode("utf-8", "surrogatepass")
        return self.lines().block(data).decode("utf-8", "surrogatepass")

    def redact_bytes(self, data: bytes) -> bytes:
        return self.lines().block(data) if data else data

    def lines(self) -> LineRedactor:
        """A redactor for one stream of lines (it remembers an open PEM block)."""
        return LineRedactor(self._needles, self._patterns, self._prefilter)

    def contains_secret(self, data: bytes) -> str | None:
        """The name of a declared variable whose value (in any form) occurs in `data`."""
        for needle in self._needles:
            if needle.data in data:
                return needle.name
        return None


class LineRedactor:
    """Redacts one stream a block of whole lines at a time (see the module's note)."""

    def __init__(
        self,
        needles: tuple[_Needle, ...],
        patterns: tuple[tuple[re.Pattern[bytes], Callable[[re.Match[bytes]], bytes]], ...],
        prefilter: Prefilter | None = None,
    ) -> None:
        self._needles = needles
        self._patterns = patterns
        self._prefilter = prefilter
        self._pem_lines = 0  # > 0: inside a private key's block, this many lines so far

    def block(self, data: bytes) -> bytes:
        """`data`: whole lines (the last may lack its newline at the stream's end)."""
        if not self._pem_lines and self._prefilter is not None and not self._prefilter.maybe(data):
            return data  # nothing the exact pass below would change
        for needle in self._needles:
            if needle.data in data:
                data = data.replace(needle.data, marker(needle.name))
        if self._patterns and (self._pem_lines or PEM_BEGIN in data):
            data = self._pem(data)
        for pattern, replace in self._patterns:
            if pattern.search(data):
                data = pattern.sub(replace, data)
        return data

    def _pem(self, data: bytes) -> bytes:
        """Private-key blocks: on one line (JSON-escaped) or over many."""
        out = []
        for line in data.splitlines(keepends=True):
            body = line.rstrip(b"\r\n")
            end = line[len(body) :]
            if self._pem_lines:
                self._pem_lines += 1
                closing = _PEM_END.match(body)
                if closing is None and self._pem_lines <= PEM_MAX_LINES:
                    out.append(PRIVATE_KEY + end)
                    continue
                self._pem_lines = 0
                if closing is None:
                    out.append(line)
                    continue
                body = PRIVATE_KEY + body[closing.end() :]
            if PEM_BEGIN in body:
                body = _PEM.sub(self._opened, body)
            out.append(body + end)
        return b"".join(out)

    def _opened(self, match: re.Match[bytes]) -> bytes:
        if not match.group(1):  # no END on this line: the key goes on below
            self._pem_lines = 1
        return PRIVATE_KEY


class Prefilter:
    """Whether a block may hold a secret: a search for all needles and token shapes.

    The bytes are decoded as Latin-1 (each byte one character, so the search is exact
    on bytes, any bytes) and searched by pydantic-core string validators whose
    `pattern` is an unanchored Rust regex. The regex crate finds up to ~64 literals in
    one SIMD pass (Teddy); past that it falls back to a slower automaton (~2.5-4
    ns/byte for 150-300 needles, the lines of a PEM key in every form), so needles
    go GROUP at a time into validators of their own: ~0.25 ns/byte each. A false
    "maybe" only costs the exact pass; a false "no" would show a secret, so every
    alternative matches wherever the exact pass would replace something
    (tests/sessions/test_session_prefilter.py)."""

    GROUP = 40  # needles per validator; the first also has the ~15 token literals

    def __init__(self, validators: Sequence[SchemaValidator]) -> None:
        self._validators = tuple(validators)

    @classmethod
    def build(cls, needles: Iterable[bytes], tokens: Iterable[str]) -> Prefilter | None:
        """None when there is nothing to look for, or a regex cannot be built (then
        every block takes the exact pass)."""
        literals = [_literal(needle) for needle in needles]
        groups = [[*tokens, *literals[: cls.GROUP]]]
        groups += [literals[i : i + cls.GROUP] for i in range(cls.GROUP, len(literals), cls.GROUP)]
        validators = []
        for group in filter(None, groups):
            validator = _validator("|".join(group))
            if validator is None:
                return None
            validators.append(validator)
        return cls(validators) if validators else None

    def extended(self, needles: Iterable[bytes]) -> Prefilter | None:
        """This prefilter and a group for `needles` too (None: as `build`)."""
        literals = [_literal(needle) for needle in needles]
        validators = list(self._validators)
        for i in range(0, len(literals), self.GROUP):
            validator = _validator("|".join(literals[i : i + self.GROUP]))
            if validator is None:
                return None
            validators.append(validator)
        return Prefilter(validators)

    def maybe(self, data: bytes) -> bool:
        text = data.decode("latin-1")
        return any(validator.isinstance_python(text) for validator in self._validators)


def _needles_of(
    pairs: Iterable[tuple[str, str]], known: Mapping[bytes, str]
) -> tuple[dict[bytes, str], list[str]]:
    """Every form of each value not in `known` (the first name given it wins), and the
    names of values too short to redact by value."""
    needles: dict[bytes, str] = {}
    short: list[str] = []
    for name, value in pairs:
        parts = [p.strip() for p in value.splitlines() if len(p.strip()) >= MIN_SECRET_CHARS]
        if not parts:
            if value.strip():
                short.append(name)
            continue
        for part in parts:
            for form in encoded_forms(part):
                if form not in known:
                    needles.setdefault(form, name)
    return needles, short


def _longest_first(needles: Mapping[bytes, str]) -> tuple[_Needle, ...]:
    # Longest first: a value that contains another is replaced whole.
    return tuple(
        _Needle(data, name) for data, name in sorted(needles.items(), key=lambda i: -len(i[0]))
    )


@functools.lru_cache(maxsize=64)
def _validator(pattern: str) -> SchemaValidator | None:
    """A compiled prefilter group; None past Rust's size limit (values of many
    kilobytes). Kept: a worker builds a redactor for every session, from mostly the
    same values, and a group of 40 takes milliseconds to compile."""
    schema = core_schema.str_schema(pattern=pattern, regex_engine="rust-regex")
    try:
        return SchemaValidator(schema)
    except Exception:
        return None


# Each byte as a Rust regex atom matching it in Latin-1 text: letters and digits as
# themselves, everything else escaped. A table, not a loop per byte: a worker's
# ~150 needles are turned into literals for every session it runs.
_LITERAL_ATOMS = {
    byte: chr(byte) if chr(byte).isascii() and chr(byte).isalnum() else f"\\x{{{byte:02x}}}"
    for byte in range(256)
}


def _literal(needle: bytes) -> str:
    """`needle` as a Rust regex matching its bytes in Latin-1 text."""
    return needle.decode("latin-1").translate(_LITERAL_ATOMS)


def _replacement(kind: str) -> Callable[[re.Match[bytes]], bytes]:
    if kind != "sk":
        fixed = marker(kind)
        return lambda match: fixed
    anthropic, openai = marker("anthropic-key"), marker("openai-key")
    return lambda match: anthropic if match.group(1) else openai


def encoded_forms(value: str) -> list[bytes]:
    """`value` as it may appear in output: itself, JSON-escaped, URL-encoded, and the
    part of its base64 (standard and URL-safe) that any surrounding bytes leave alone."""
    raw = value.encode("utf-8", "surrogatepass")
    forms = [raw]
    for text in (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
        forms.append(text.encode("utf-8", "surrogatepass"))
    forms.append(quote(value, safe="").encode())
    for offset in range(3):
        # Preceded by `offset` bytes, the value's first group mixes with them and
        # its last with what follows: only the groups in between are its own.
        encoded = base64.b64encode(bytes(offset) + raw)
        start = 4 if offset else 0
        stop = len(encoded) - (4 if (offset + len(raw)) % 3 else 0)
        core = encoded[start:stop]
        forms += [core, core.replace(b"+", b"-").replace(b"/", b"_")]
    return [form for form in dict.fromkeys(forms) if len(form) >= MIN_SECRET_CHARS]
