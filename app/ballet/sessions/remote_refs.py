"""GitHub's heads and tags, asked in one HTTP request, to skip a fetch that would bring nothing.

Between two sessions the mirror is usually already at GitHub's heads: Ballet itself
pushed the last one and put it in the mirror (mirror.take_pushed). A `git fetch`
would still cost a process, a credential round and two or three requests. This asks
only the refs, with git protocol v2's `ls-refs` (gitprotocol-v2(5)), over a kept-alive
connection, and compares them with the mirror's: the same names with the same ids
mean the fetch (`+refs/heads/*`, `+refs/tags/*`, pruned) would change nothing.

Protocol v2 over HTTP is stateless: the `GET info/refs` git sends first only tells
it which version the server speaks, and no server can tie that GET to the POST that
follows. So the POST goes alone, and its answer shows the version: anything but a
well-formed v2 `ls-refs` answer (an HTTP error, a v0 server, a truncated body, an
`ERR` line) is "unknown", and the caller fetches. Never a wrong "equal": that would
start a session on a head GitHub no longer has.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import structlog

from ballet.sessions.git import GitError
from ballet.sessions.git_auth import authorization
from ballet.sessions.mirror import all_refs, refs_by_name

# What the mirror holds of GitHub's refs (mirror.MIRROR_CONFIG_TEXT's refspecs).
PREFIXES = ("refs/heads/", "refs/tags/")
# Bounded, unlike the fetch it may save: a check that hangs is worth less than a fetch.
TIMEOUT = httpx.Timeout(10.0, connect=5.0)
MAX_BYTES = 32 * 2**20  # tens of thousands of refs; past that, just fetch
RESULT_TYPE = "application/x-git-upload-pack-result"
_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256, as git writes them
_ATTRIBUTE = re.compile(r"(symref-target|peeled):\S+")
_REFNAME = re.compile(r"refs/[^\x00-\x20\x7f~^:?*\[\\]+")

log = structlog.get_logger("ballet.sessions.remote_refs")


class UnknownRefs(Exception):
    """The answer was not a well-formed v2 `ls-refs` answer; the message says how."""


def new_client() -> httpx.AsyncClient:
    """The worker's client for these requests: one pool, kept alive between sessions.
    httpx's own SSL context honours SSL_CERT_FILE / SSL_CERT_DIR (a GHES CA), as the
    GitHub API client's does (github/client.py)."""
    return httpx.AsyncClient(
        timeout=TIMEOUT, follow_redirects=False, verify=httpx.create_ssl_context()
    )


def pkt_line(text: str) -> bytes:
    data = text.encode()
    return b"%04x" % (len(data) + 4) + data


# command=ls-refs, no capabilities, delim-pkt, the prefixes asked, flush-pkt.
LS_REFS_REQUEST = (
    pkt_line("command=ls-refs\n")
    + b"0001"
    + b"".join(pkt_line(f"ref-prefix {prefix}\n") for prefix in PREFIXES)
    + b"0000"
)


def parse_ls_refs(body: bytes) -> dict[str, str]:
    """The heads and tags of an `ls-refs` answer (pkt-lines of `<oid> <refname>`, then a
    flush-pkt and nothing after it); raises UnknownRefs on anything else."""
    refs: dict[str, str] = {}
    at = 0
    while True:
        header = body[at : at + 4]
        if len(header) < 4 or not re.fullmatch(rb"[0-9a-f]{4}", header):
            raise UnknownRefs(f"no pkt-line length at byte {at}")
        size = int(header, 16)
        if size == 0:  # flush-pkt: the answer's end
            if at + 4 != len(body):
                raise UnknownRefs("bytes after the flush-pkt")
            return refs
        if size < 4 or at + size > len(body):
            raise UnknownRefs(f"a pkt-line of length {size} at byte {at}")
        line = body[at + 4 : at + size].removesuffix(b"\n")
        at += size
        try:
            oid, refname, *attributes = line.decode("utf-8").split(" ")
        except (UnicodeDecodeError, ValueError):
            raise UnknownRefs(f"not a ref line: {line[:80]!r}") from None
        if not _OID.fullmatch(oid) or not _REFNAME.fullmatch(refname):
            raise UnknownRefs(f"not a ref line: {line[:80]!r}")
        if not all(_ATTRIBUTE.fullmatch(attribute) for attribute in attributes):
            raise UnknownRefs(f"unknown ref attributes: {line[:80]!r}")
        if refname in refs:
            raise UnknownRefs(f"{refname} twice")
        # The prefixes asked are a hint to the server: it may answer more.
        if refname.startswith(PREFIXES):
            refs[refname] = oid


async def remote_refs(
    client: httpx.AsyncClient, clone_url: str, token: str | None
) -> dict[str, str]:
    """The remote's heads and tags and their ids, as GitHub answers now; raises
    UnknownRefs (or httpx.HTTPError) when it cannot be told for sure."""
    if urlsplit(clone_url).scheme not in ("http", "https"):
        raise UnknownRefs("not an HTTP remote")
    headers = {
        "Content-Type": "application/x-git-upload-pack-request",
        "Accept": RESULT_TYPE,
        "Git-Protocol": "version=2",
        "User-Agent": "git/ballet",
    }
    if token is not None:  # the header git sends (git_auth.auth_environment)
        headers["Authorization"] = authorization(token)
    url = clone_url.rstrip("/") + "/git-upload-pack"
    async with client.stream("POST", url, content=LS_REFS_REQUEST, headers=headers) as response:
        if response.status_code != 200:
            raise UnknownRefs(f"HTTP {response.status_code}")
        if response.headers.get("content-type", "").split(";")[0].strip() != RESULT_TYPE:
            raise UnknownRefs(f"content type {response.headers.get('content-type')!r}")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_BYTES:
                raise UnknownRefs("an answer too long to be worth reading")
    return parse_ls_refs(bytes(body))


def mirror_refs(for_each_ref: str) -> dict[str, str]:
    """The heads and tags in `mirror.all_refs`'s output."""
    return {
        name: oid for name, oid in refs_by_name(for_each_ref).items() if name.startswith(PREFIXES)
    }


def begin_look(
    client: httpx.AsyncClient | None, clone_url: str, token: str | None
) -> asyncio.Task[dict[str, str]] | None:
    """GitHub's heads and tags asked now, in the background (None: no client to ask
    with). A refresh asks before it takes the mirror's lock, which the last session's
    push going into the mirror may hold: GitHub has that push already."""
    if client is None:
        return None
    look = asyncio.create_task(remote_refs(client, clone_url, token))
    look.add_done_callback(_retrieved)  # a look cancelled or never awaited raises nothing
    return look


@dataclass(frozen=True)
class Look:
    url: str
    began: float  # time.monotonic()
    task: asyncio.Task[dict[str, str]]


class Looks:
    """The last look at GitHub's refs of each mirror, shared: a refresh's and a
    prepared clone's take (workspace.py) ask GitHub once for a session, not each."""

    def __init__(self, client: httpx.AsyncClient | None, fresh_seconds: float) -> None:
        self._client = client
        self._fresh_seconds = fresh_seconds
        self._last: dict[Path, Look] = {}

    def since(self, mirror: Path, clone_url: str, token: str | None, since: float) -> Look | None:
        """A look begun at or after `since`: the last one, if less than `fresh_seconds`
        old and not failed; else one begun now. None: no client to ask with."""
        held, now = self._last.get(mirror), time.monotonic()
        if (
            held is not None
            and held.url == clone_url
            and since <= held.began
            and now - held.began < self._fresh_seconds
            and not (held.task.done() and (held.task.cancelled() or held.task.exception()))
        ):
            return held
        task = begin_look(self._client, clone_url, token)
        if task is None:
            return None
        self._last[mirror] = Look(clone_url, now, task)
        return self._last[mirror]


async def unmoved(
    look: asyncio.Task[dict[str, str]] | None, mirror: Path, env: Mapping[str, str]
) -> bool:
    """True only when the `look`'s heads and tags are the mirror's, name for name and
    id for id: a fetch now would change nothing. False when they differ or cannot be
    told, or there is no look. The caller holds the mirror's lock (nothing writes its
    refs meanwhile)."""
    if look is None:
        return False
    # The mirror is read while the request is out: its git process costs no time of its own.
    remote, local = await asyncio.gather(look, all_refs(mirror, env), return_exceptions=True)
    if isinstance(local, GitError):
        log.info("mirror refs unread: fetching", error=str(local))
        return False
    if isinstance(remote, UnknownRefs | httpx.HTTPError | httpx.InvalidURL):
        log.info("remote refs unknown: fetching", reason=f"{type(remote).__name__}: {remote}")
        return False
    for outcome in (remote, local):
        if isinstance(outcome, BaseException):
            raise outcome
    assert not isinstance(remote, BaseException) and not isinstance(local, BaseException)
    return remote == mirror_refs(local)


def _retrieved(look: asyncio.Task[dict[str, str]]) -> None:
    if not look.cancelled():
        look.exception()
