"""Which texts may name an issue: an index the timeline reads instead of every text.

GitHub's timeline lists the issues, pull requests and comments of any repository
that name an issue ("cross-referenced"). Found by reading every text of every
repository, that cost grew with all the tickets ever filed, on every timeline
read: at a thousand tickets it was a fifth of the sandbox's thread. So each text
is noted here as it is written, edited or deleted, under every number it has
after a `#` or a `/` (every form that names an issue has one), and the timeline
reads only the texts noted under its issue's number, then applies its exact
pattern to each as before. A superset, never fewer: a text that names `#12`
has `12` after a `#`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["issue", "comment"]
# (repository key as in Sandbox.repos, kind, the number or the comment's id)
Source = tuple[str, Kind, int]

_NUMBER = re.compile(r"[#/](\d+)")


@dataclass
class References:
    _by_number: dict[int, dict[Source, None]] = field(default_factory=dict)
    _numbers: dict[Source, frozenset[int]] = field(default_factory=dict)

    def note(self, repo_key: str, kind: Kind, key: int, text: str | None) -> None:
        """A text was written or edited: noted under the numbers it has now only."""
        source: Source = (repo_key, kind, key)
        self.forget(repo_key, kind, key)
        numbers = frozenset(int(n) for n in _NUMBER.findall(text or ""))
        if not numbers:
            return
        self._numbers[source] = numbers
        for number in numbers:
            self._by_number.setdefault(number, {})[source] = None

    def forget(self, repo_key: str, kind: Kind, key: int) -> None:
        source: Source = (repo_key, kind, key)
        for number in self._numbers.pop(source, ()):
            sources = self._by_number.get(number)
            if sources is not None:
                sources.pop(source, None)
                if not sources:
                    del self._by_number[number]

    def naming(self, number: int) -> list[Source]:
        """The texts that may name issue `number` (of any repository), oldest noted first."""
        return list(self._by_number.get(number, ()))
