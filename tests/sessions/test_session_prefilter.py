"""The redactor's prefilter (sessionlog/redact.py `Prefilter`): a block it passes over is
one the exact pass would have left as it is, whatever the block holds; a block with
anything to redact is redacted exactly as without it."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

from ballet.sessionlog.redact import TOKEN_PREFILTERS, Prefilter, Redactor
from hypothesis import given, settings
from hypothesis import strategies as st

# A declared value with bytes a regex would read as syntax, and one not ASCII.
VALUE = "p@ss/w0rd+=%(x)[y]{2}|^$.*?\\q-ü"
TOKENS = [
    "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123",
    "sk-" + "T3BlbkFJ" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7d",
    "sk-proj-" + "Ab12_Cd34-Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12",
    "sk-ant-api03-" + "Xy12Zw34_Ab56-Cd78Ef90Gh12Ij34Kl56Mn78Op90Qr12St34",
    "AIza" + "SyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v",
    "AKIA" + "IOSFODNN7EXAMPLE",
    "ASIA" + "Y34FZKBOKMUTVV7A",
    "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOp",
]
PEM = ["-----BEGIN RSA PRIVATE KEY-----", "MIIEow", "-----END RSA PRIVATE KEY-----"]
PEM_HEADS = ["-----BEGIN PRIVATE KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----"]
FORMS = [
    VALUE,
    json.dumps(VALUE)[1:-1],
    quote(VALUE, safe=""),
    base64.b64encode(VALUE.encode()).decode(),
    base64.urlsafe_b64encode(b"xy" + VALUE.encode()).decode(),
]
# Pieces a block is made of: tokens whole and in part, the value in every form and in
# part, key-block lines, near misses, and bytes that are no UTF-8.
PIECES = [
    *TOKENS,
    *(token[: len(token) // 2] for token in TOKENS),
    *PEM,
    *PEM_HEADS,
    "-----BEGIN CERTIFICATE-----",
    *FORMS,
    VALUE[:8],
    "task-list-for-the-new-view-and-some-more-words-after",
    "ghost ",
    "A",
    "0123456789abcdefABCDEF_-",
    " ",
    '"',
    "\\",
    "é",
    "\n",
]


def _pair() -> tuple[Redactor, Redactor]:
    secrets = {"PLANTED": VALUE, "OTHER": "Zq9" * 10}
    return Redactor(secrets), Redactor(secrets, prefilter=False)


blocks = st.lists(
    st.lists(st.sampled_from(PIECES) | st.binary(max_size=3).map(lambda b: b.decode("latin-1")))
    .map("".join)
    .map(lambda text: text.encode("utf-8", "surrogatepass") + b"\n"),
    min_size=1,
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(blocks)
def test_with_the_prefilter_every_block_is_redacted_as_without_it(stream: list[bytes]) -> None:
    fast, exact = (redactor.lines() for redactor in _pair())  # a stream each: PEM state too
    for block in stream:
        assert fast.block(block) == exact.block(block)


def test_every_token_and_every_form_of_a_value_passes_the_prefilter() -> None:
    fast, exact = _pair()
    for piece in [*TOKENS, *(head + "\nMIIE\n" + PEM[2] for head in [PEM[0], *PEM_HEADS]), *FORMS]:
        data = f"before {piece} after\n".encode()
        assert exact.redact_bytes(data) != data, piece
        assert fast.redact_bytes(data) == exact.redact_bytes(data), piece


def test_a_block_with_nothing_to_redact_is_returned_as_it_is() -> None:
    fast, _ = _pair()
    data = b"".join(
        b"%08d step ok: compiled src/module.py, task-list ghost\n" % i for i in range(99)
    )
    assert fast.lines().block(data) is data


def test_the_prefilter_finds_any_bytes_of_a_value_and_nothing_else() -> None:
    needles = [form.encode() for form in FORMS] + [b"\x00\xff\n\\x41[a]$"]
    prefilter = Prefilter.build(needles, TOKEN_PREFILTERS)
    assert prefilter is not None  # every byte escaped: the regex always builds
    for needle in needles:
        assert prefilter.maybe(b"\xfe before " + needle + b" after")
        assert not prefilter.maybe(b"\xfe before " + needle[:-1] + b" after")
    assert all(prefilter.maybe(token.encode()) for token in TOKENS)


def test_a_value_of_many_lines_is_found_by_every_line_in_every_form() -> None:
    """A PEM key's lines in all their forms are some 200 needles: the prefilter's
    validators take them a group at a time, and none is left out."""
    lines = [f"{i:02d}" + "Kq7+Zr/Wd" * 7 for i in range(27)]
    secrets = {"APP_KEY": "\n".join(lines)}
    fast, exact = Redactor(secrets), Redactor(secrets, prefilter=False)
    for line in lines:
        for form in (line, quote(line, safe=""), base64.b64encode(b"ab" + line.encode()).decode()):
            data = f"printed {form}.\n".encode()
            assert b"[redacted:APP_KEY]" in fast.redact_bytes(data), form
            assert fast.redact_bytes(data) == exact.redact_bytes(data)


@settings(max_examples=200, deadline=None)
@given(blocks)
def test_a_value_added_later_is_redacted_as_one_given_at_first(stream: list[bytes]) -> None:
    """`adding` (the git token, asked for as the session pushes) works out only the new
    value's forms and gives them a prefilter group of their own; it must redact,
    name and report too-short values exactly as a redactor made with all of them."""
    first = {"OTHER": "Zq9" * 10, "SHORT": "abc"}
    later = {"PLANTED": VALUE, "TINY": "xy"}
    added = Redactor(first).adding(later)
    whole = Redactor({**first, **later}, prefilter=False)
    assert (added.names, added.too_short, added.longest) == (
        whole.names,
        whole.too_short,
        whole.longest,
    )
    fast, exact = added.lines(), whole.lines()
    for block in stream:
        assert fast.block(block) == exact.block(block)
        assert added.contains_secret(block) == whole.contains_secret(block)
    for form in FORMS:
        data = f"before {form} after\n".encode()
        assert added.redact_bytes(data) == whole.redact_bytes(data) != data, form
