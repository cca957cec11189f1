"""A session's pushed commits received aside while GitHub takes the push, and moved
into the mirror only once GitHub has them.

The mirror must hold only what GitHub holds (every session of the repository
reads its objects). It used to be given a pushed head after GitHub's answer, by
a local `git push` into itself: five git processes (send-pack, receive-pack,
pack-objects, index-pack, the connectivity check) on the next session's path,
under the mirror's lock. Here, beside GitHub's push:

- `git pack-objects --revs` packs what the head reaches and the session's start
  does not, from the mirror with the clone's objects lent to it for that command
  (as for the push itself), into `<mirror>/ballet-incoming/<n>/`, outside the
  object store: no git process of the mirror, and no session, sees it;
- `git index-pack --strict` indexes that pack again from its contents, in the
  mirror: each object is named by its own hash, whatever names the clone's files
  gave them, and a pack whose objects link to any the mirror and the pack lack
  is refused (what receive-pack's connectivity check refused).

Once GitHub accepted the push, under the mirror's lock, the pack and its index are
renamed into the object store and the branch set (`git update-ref`, which refuses
a head the objects do not hold). Anything amiss (GitHub refused, packing failed,
a cancellation) and the directory is removed: the mirror never held those objects.
The caller then falls back to the local push (mirror.take_pushed) or to nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from collections.abc import Mapping
from pathlib import Path

import structlog

from ballet.sessions.git import run_git
from ballet.sessions.leftovers import remove_tree, to_the_end

log = structlog.get_logger("ballet.sessions.incoming")

INCOMING = "ballet-incoming"  # under the mirror, beside (never in) its objects
_PACK_NAME = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_numbers = itertools.count()


class Incoming:
    """The pack of `sha`'s new objects, being made aside (begun at construction)."""

    def __init__(
        self, mirror: Path, sending: Mapping[str, str], env: Mapping[str, str], sha: str, start: str
    ) -> None:
        self._mirror = mirror
        self._env = env
        self._sha = sha
        self._dir = mirror / INCOMING / f"{os.getpid()}-{next(_numbers)}"
        self._packing = asyncio.create_task(self._pack(sending, sha, start))

    async def _pack(self, sending: Mapping[str, str], sha: str, start: str) -> str:
        self._dir.mkdir(parents=True)
        base = str(self._dir / "pack")
        _, out, _ = await run_git(
            "pack-objects", "--revs", "-q", base,
            cwd=self._mirror, env=sending, stdin=f"{sha}\n^{start}\n".encode(),
        )  # fmt: skip
        name = out.strip()
        if not _PACK_NAME.match(name):
            raise OSError(f"pack-objects named its pack {name!r}")
        # Its own index trusted the clone's file names: made again from the contents.
        (self._dir / f"pack-{name}.idx").unlink()
        pack = self._dir / f"pack-{name}.pack"
        await run_git(
            "index-pack", "--strict", "-o", str(pack.with_suffix(".idx")), str(pack),
            cwd=self._mirror, env=self._env,
        )  # fmt: skip
        return name

    async def move_in(self, branch: str) -> bool:
        """The pack into the mirror's objects and `branch` set to its head; False when the
        pack could not be made (the caller gives the mirror the head another way).
        Only once GitHub has the push, under the mirror's lock."""
        await asyncio.wait([self._packing])
        if self._packing.cancelled() or self._packing.exception() is not None:
            error = "cancelled" if self._packing.cancelled() else repr(self._packing.exception())
            log.info("pushed commits not received aside", branch=branch, error=error)
            return False
        name = self._packing.result()
        store = self._mirror / "objects" / "pack"
        # The pack before its index: git looks a pack up by its index.
        for suffix in (".pack", ".idx"):
            (self._dir / f"pack-{name}{suffix}").rename(store / f"pack-{name}{suffix}")
        await run_git(
            "update-ref", f"refs/heads/{branch}", self._sha, cwd=self._mirror, env=self._env
        )
        return True

    async def discard(self) -> None:
        """Whatever was received aside goes (moved in already, or never to be)."""
        self._packing.cancel()
        await to_the_end(asyncio.wait([self._packing]))
        await to_the_end(asyncio.to_thread(remove_tree, self._dir))
