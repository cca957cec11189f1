"""Which texts may name an issue: an index the timeline reads instead of every text.

GitHub's timeline lists the issues, pull requests and comments of any repository
that name an issue ("cross-referenced"). Found by reading every text of every
repository, that cost grew with all the tickets ever filed, on every timeline
read: at a thousand tickets it was a fifth of the sandbox's thread. So each text
is noted here as it is written, edited or deleted, under each (repository,
number) it may name: a bare `#12` names its own repository's 12, `owner/name#12`
and a link `…/owner/name/issues/12` (or `/pull/12`) that repository's. The
timeline reads only the texts noted under its issue, then applies its exact
pattern to each as before. A superset, never fewer: every form the pattern
accepts is one of these three.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["issue", "comment"]
# (repository key as in Sandbox.repos, kind, the number or the comment's id)
Source = tuple[str, Kind, int]
# (repository key, issue number): what a text may name
Named = tuple[str, int]

_BARE = re.compile(r"#(\d+)")
_QUALIFIED = re.compile(r"([\w.-]+/[\w.-]+)#(\d+)")
_LINKED = re.compile(r"/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)")


@dataclass
class References:
    _by_named: dict[Named, dict[Source, None]] = field(default_factory=dict)
    _named: dict[Source, frozenset[Named]] = field(default_factory=dict)

    def note(self, repo_key: str, kind: Kind, key: int, text: str | None) -> None:
        """A text was written or edited: noted under what it names now only."""
        source: Source = (repo_key, kind, key)
        self.forget(repo_key, kind, key)
        named = _named_in(repo_key, text or "")
        if not named:
            return
        self._named[source] = named
        for at in named:
            self._by_named.setdefault(at, {})[source] = None

    def forget(self, repo_key: str, kind: Kind, key: int) -> None:
        source: Source = (repo_key, kind, key)
        for at in self._named.pop(source, ()):
            sources = self._by_named.get(at)
            if sources is not None:
                sources.pop(source, None)
                if not sources:
                    del self._by_named[at]

    def naming(self, repo_key: str, number: int) -> list[Source]:
        """The texts that may name issue `number` of `repo_key`, oldest noted first."""
        return list(self._by_named.get((repo_key, number), ()))


def _named_in(repo_key: str, text: str) -> frozenset[Named]:
    if "#" not in text and "/" not in text:
        return frozenset()
    named = {(repo_key, int(n)) for n in _BARE.findall(text)}
    named.update((name.lower(), int(n)) for name, n in _QUALIFIED.findall(text))
    named.update((name.lower(), int(n)) for name, n in _LINKED.findall(text))
    return frozenset(named)
