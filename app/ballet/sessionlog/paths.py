"""Where a finished session's log lives in the object store, named from its job key.

Job keys look like `owner/repo#12:implement:1:1[:phase]`, and nothing stops a
test or a future key from holding `/`, `..`, spaces or any Unicode. The objects
are grouped by ticket, `logs/<owner>/<repo>/<number>/`, so an operator finds a
repository's logs by prefix; each name is a digest of the whole job key, so no
character of a key can reach outside its folder or collide with another key.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

# Every object of a session log is under this prefix: the sweep lists only it.
ROOT = "logs"

# What every object store accepts in a path segment as is (S3 keys, GCS, Azure
# blobs, a local file name); anything else is replaced, never percent-encoded,
# since stores disagree on whether `%` is itself escaped.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class LogPaths:
    """The three objects of one finished session log."""

    log: str  # the redacted log, gzip
    steps: str  # its rendered steps, gzip JSON
    meta: str  # a small JSON of facts about it, written last: its presence says the log is whole


def log_paths(job_key: str) -> LogPaths:
    folder = "/".join((ROOT, *_ticket_folder(job_key)))
    # 128 bits: no two job keys of one ticket will ever share a name.
    digest = hashlib.sha256(job_key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    base = f"{folder}/{digest}"
    return LogPaths(log=f"{base}.log.gz", steps=f"{base}.steps.json.gz", meta=f"{base}.json")


def _ticket_folder(job_key: str) -> tuple[str, ...]:
    ticket = job_key.split(":", 1)[0]
    owner, slash, rest = ticket.partition("/")
    repo, hash_sign, number = rest.rpartition("#")
    if not (slash and hash_sign and owner and repo and number):
        return ("_other",)  # not a ticket's job key: kept, swept, just not grouped
    return (_segment(owner), _segment(repo), _segment(number))


def _segment(text: str) -> str:
    safe = _UNSAFE.sub("_", text)[:100]
    # `.` and `..` are refused by every store (and would climb out of a local one).
    return "_" if safe in ("", ".", "..") else safe
