"""Workspaces: a bare mirror per repository, and per session a clone sharing its objects.

Layout under `root`:
    mirrors/<owner>/<name>.git        bare mirror of refs/heads/* and refs/tags/*
    mirrors/<owner>/<name>.git/ballet-leases/<key>   one per live clone
    mirrors/<owner>/<name>.lock       flock serialising fetch, lease-taking and gc
    sessions/<key>/repo               the session's clone (`git clone --shared`)
    sessions/<key>/home               the session's fresh, empty HOME
    sessions/<key>/ballet             BALLET_* files, outside the clone so never committed
    sessions/<key>/tmp                the session's /tmp, when sessions/<key> is a disk of
                                      its own: a size-limited tmpfs (disk.py)

A `--shared` clone borrows the mirror's objects through objects/info/alternates,
so creating one costs a checkout, not a copy. It also means the mirror must
never drop an object a clone may still use: the mirror has gc.auto=0 and
gc.pruneExpire=never, and `gc()` runs only while no lease is held.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import structlog

from ballet.sessions.disk import mount_limited, move_mount
from ballet.sessions.git import GitError, git_environment, run_git
from ballet.sessions.git_auth import auth_environment
from ballet.sessions.leftovers import remove_dir, remove_stale, to_the_end
from ballet.sessions.mirror import gc_mirror, init_mirror, locked, mirror_heads
from ballet.sessions.prepared import PreparedClones
from ballet.sessions.remote_refs import begin_look, unmoved

# An agent's own `git push` fails with this message: Ballet pushes the ticket
# branch itself after the session, and nothing may write to the shared mirror.
NO_PUSH_URL = "/ballet-pushes-the-ticket-branch-after-the-session"
_KEY = re.compile(r"[^A-Za-z0-9_.-]+")
# How long a fetch counts as fresh for a refresh asked `since` its start: long enough
# for a session job to follow its launch, far shorter than anything a person does.
FRESH_SECONDS = 5.0


log = structlog.get_logger("ballet.sessions.workspace")


class WorkspaceError(Exception):
    """A workspace could not be prepared; the message says why and what to do."""


@dataclass(frozen=True)
class GitIdentity:
    name: str = "Ballet"
    email: str = "ballet@users.noreply.github.com"


@dataclass(frozen=True)
class Workspace:
    key: str
    root: Path
    clone: Path
    home: Path
    files: Path
    mirror: Path
    lease: Path
    branch: str  # the branch checked out (the ticket branch, or the base)
    start_sha: str
    branch_existed: bool  # False: created from the base for this session
    tmp: Path | None = None  # its own /tmp, when the workspace is a size-limited disk
    prepared: bool = False  # its clone was prepared ahead (prepared.py), not made now


class Workspaces:
    def __init__(
        self,
        root: Path,
        *,
        identity: GitIdentity | None = None,
        parent_env: Mapping[str, str] | None = None,
        refs_http: httpx.AsyncClient | None = None,
    ) -> None:
        self.root = root.resolve()
        self.refs_http = refs_http  # its owner closes it; without one, a refresh always fetches
        self.identity = identity or GitIdentity()
        git_home = self.root / "git-home"
        git_home.mkdir(parents=True, exist_ok=True)
        self.git_env = git_environment(os.environ if parent_env is None else parent_env, git_home)
        # Per mirror: when this process's last successful fetch (or a look finding nothing
        # to fetch) began and ended.
        self._fetched: dict[Path, tuple[float, float]] = {}
        self._refreshing: dict[Path, int] = {}  # refreshes under way, by mirror
        self._urls: dict[Path, str] = {}  # per mirror: the origin URL this process set
        # Each workspace made and not yet removed, and its lease: removed as the worker
        # stops (`aclose`), whatever became of the job that made it.
        self._held: dict[Path, Path] = {}
        # A workspace's pushed commits being given to the mirror (push.py): its clone's
        # objects are read until that ends, so the workspace goes only after it.
        self.giving: dict[Path, asyncio.Task[None]] = {}
        self._closed = False
        # The disks a dead worker left (SIGKILLed: nothing of it ran to unmount them),
        # its sessions' and its prepared clones' alike, before this one makes any.
        remove_stale(self.root)
        self.prepared = PreparedClones(self.root)
        self.prepared.sweep()

    def mirror_path(self, repo: str) -> Path:
        owner, _, name = repo.partition("/")
        if not owner or not name or {owner, name} & {".", ".."} or "/" in name:
            raise WorkspaceError(f"repository {repo!r} is not of the form owner/name")
        return self.root / "mirrors" / owner / f"{name}.git"

    async def refresh(
        self, repo: str, clone_url: str, token: str | None, *, since: float | None = None
    ) -> Path:
        """Create the mirror or fetch into it (incremental; none when GitHub's refs are
        the mirror's, remote_refs.py); returns its path.

        With `since` (a `time.monotonic()` of this process), a fetch this process began
        at or after it, and finished less than FRESH_SECONDS ago, is taken as this
        one: the mirror is as fresh as the caller asked (see jobs/prefetch.py)."""
        _refuse_credentials(clone_url)
        mirror = self.mirror_path(repo)
        # Usually nothing moved (Ballet pushed the last head and put it here): GitHub's
        # refs, asked before the lock (by the first refresh waiting for it only), and the
        # mirror's own, say a fetch would bring nothing.
        began, existed = time.monotonic(), (mirror / "HEAD").exists()
        ask = existed and not self._fresh(mirror, since) and mirror not in self._refreshing
        look = begin_look(self.refs_http, clone_url, token) if ask else None
        self._refreshing[mirror] = self._refreshing.get(mirror, 0) + 1
        try:
            async with locked(mirror):
                if self._fresh(mirror, since):
                    return mirror
                existed = (mirror / "HEAD").exists()
                if not existed:
                    await init_mirror(mirror, self.git_env)
                    self._urls.pop(mirror, None)
                # The mirror is this worker's alone (no session writes it): a URL set once
                # by this process stays set, and needs no git process per session.
                if self._urls.get(mirror) != clone_url:
                    await run_git(
                        "config", "remote.origin.url", clone_url, cwd=mirror, env=self.git_env
                    )
                    self._urls[mirror] = clone_url
                if look is None and existed:
                    began, look = time.monotonic(), begin_look(self.refs_http, clone_url, token)
                if existed and await unmoved(look, mirror, self.git_env):
                    self._fetched[mirror] = (began, time.monotonic())
                    return mirror
                await self._fetch(repo, mirror, clone_url, token)
        finally:
            if look is not None:
                look.cancel()
            self._refreshing[mirror] -= 1
            if not self._refreshing[mirror]:
                del self._refreshing[mirror]
        return mirror

    def _fresh(self, mirror: Path, since: float | None) -> bool:
        fetched = self._fetched.get(mirror)
        return (
            since is not None
            and fetched is not None
            and fetched[0] >= since
            and time.monotonic() - fetched[1] < FRESH_SECONDS
        )

    async def _fetch(self, repo: str, mirror: Path, clone_url: str, token: str | None) -> None:
        env, began = auth_environment(self.git_env, token), time.monotonic()
        try:
            await run_git("fetch", "--quiet", "--prune", "--tags", "origin", cwd=mirror, env=env)
            self._fetched[mirror] = (began, time.monotonic())
        except GitError as error:
            raise WorkspaceError(
                f"could not fetch {repo} from {clone_url}: {error.stderr.strip()}; "
                "check the URL and that the App is installed on the repository"
            ) from error

    async def create(
        self, repo: str, *, key: str, branch: str | None, base: str, disk: int | None = None
    ) -> Workspace:
        """A fresh clone of `branch` (made from `base` when it does not exist yet). With
        `disk`, the whole workspace is a tmpfs of that many bytes, /tmp included."""
        self._refuse_when_closed()
        mirror = self.mirror_path(repo)
        if not (mirror / "HEAD").exists():
            raise WorkspaceError(f"no mirror of {repo} yet: call refresh() first")
        key = directory_name(key)
        root = self.root / "sessions" / key
        if root.exists():  # left by a crashed worker: the session starts over
            await remove_dir(root)
        if disk is not None:  # and the disks any crashed worker left, whoever's they were
            await asyncio.to_thread(remove_stale, self.root / "sessions")
        clone, home, files = root / "repo", root / "home", root / "ballet"
        tmp = root / "tmp" if disk is not None else None
        lease = mirror / "ballet-leases" / key
        async with locked(mirror):
            lease.parent.mkdir(exist_ok=True)
            lease.write_text(str(root))
        self._held[root] = lease
        try:
            root.mkdir(parents=True)
            claimed = await self._claim(mirror, root, branch, base, disk)
            if disk is not None and claimed is None:
                self._refuse_when_closed()  # in the same step as the mount: none after aclose
                mount_limited(root, disk)
            home.mkdir()
            files.mkdir()
            if tmp is not None:
                tmp.mkdir()
                tmp.chmod(0o1777)  # as /tmp is
            if claimed is None:
                made = await self._clone(mirror, clone, branch, base, repo)
            else:
                made = claimed
            start_sha, checked_out, existed = made
        except OSError as error:
            await self._discard(root, lease)
            raise WorkspaceError(f"could not make the session's workspace: {error}") from error
        except BaseException:
            await self._discard(root, lease)
            raise
        return Workspace(
            key, root, clone, home, files, mirror, lease, checked_out, start_sha, existed, tmp,
            prepared=claimed is not None,
        )  # fmt: skip

    def prepare(self, repo: str, *, branch: str, base: str, disk: int | None = None) -> None:
        """Begin making the next session's clone of `branch` now (prepared.py); call
        once this session's processes are gone and its push is in the mirror."""
        mirror = self.mirror_path(repo)
        if not (mirror / "HEAD").exists():
            return

        async def make(source: Path, clone: Path) -> tuple[str, str, bool]:
            return await self._clone(source, clone, branch, base, repo)

        name = directory_name(f"{repo}:{branch}")
        self.prepared.start(mirror, f"{branch}\n{base}", name, make, self.git_env, disk)

    async def unprepare(self, repo: str, *, branch: str, base: str) -> None:
        """Drop the clone `prepare` began: no session of the branch is next."""
        await self.prepared.drop(self.mirror_path(repo), f"{branch}\n{base}")

    async def _claim(
        self, mirror: Path, root: Path, branch: str | None, base: str, disk: int | None
    ) -> tuple[str, str, bool] | None:
        """The clone prepared of this branch moved into `root` (with the disk it was
        made on, if any), if it is still what a fresh clone would be."""
        key = f"{branch or base}\n{base}"
        prepared = await self.prepared.claim(mirror, key, self.git_env, disk)
        if prepared is None:
            return None
        try:
            if disk is None:
                prepared.clone.rename(root / "repo")
            else:
                self._refuse_when_closed()
                move_mount(prepared.root, root)
        except OSError as error:
            log.info("prepared clone not moved", error=str(error))
            return None
        finally:
            await self.prepared.release(prepared)
        return prepared.start_sha, prepared.branch, prepared.branch_existed

    async def remove(self, workspace: Workspace) -> None:
        await self._discard(workspace.root, workspace.lease)

    async def aclose(self) -> None:
        """The worker stops: every clone prepared and every workspace still here is
        removed, its disk unmounted, even one whose job is still ending (cancelled
        again as it ended, and left to end by itself); none is made after."""
        self._closed = True
        await self.prepared.aclose()
        for root, lease in list(self._held.items()):
            await self._discard(root, lease)

    def _refuse_when_closed(self) -> None:
        if self._closed:
            raise WorkspaceError("the worker is stopping: no workspace is made now")

    @contextlib.asynccontextmanager
    async def session(
        self, repo: str, *, key: str, branch: str | None, base: str
    ) -> AsyncIterator[Workspace]:
        workspace = await self.create(repo, key=key, branch=branch, base=base)
        try:
            yield workspace
        finally:
            await self.remove(workspace)

    async def gc(self, repo: str) -> bool:
        """Garbage-collect the mirror if no clone holds a lease; True when it ran."""
        return await gc_mirror(self.mirror_path(repo), self.git_env)

    async def _clone(
        self, mirror: Path, clone: Path, branch: str | None, base: str, repo: str
    ) -> tuple[str, str, bool]:
        env = self.git_env
        target = branch or base
        # The clone, the branch name's check and the reading of the heads are three git
        # processes of their own: run together, not one after the other. The heads are
        # read from the mirror (the clone's origin/* are copied from it) and the
        # checkout names the commit, so a fetch between the two changes nothing here.
        clone_command = run_git(
            "clone", "--quiet", "--shared", "--no-checkout",
            "-c", f"user.name={self.identity.name}",
            "-c", f"user.email={self.identity.email}",
            "-c", f"remote.origin.pushurl={NO_PUSH_URL}",
            str(mirror), str(clone),
            cwd=None, env=env,
        )  # fmt: skip
        cloned, valid, heads = await asyncio.gather(
            clone_command,
            run_git("check-ref-format", "--branch", target, cwd=mirror, env=env, check=False),
            mirror_heads(mirror, (target, base), env),
            return_exceptions=True,
        )
        for outcome in (cloned, valid, heads):
            if isinstance(outcome, BaseException):
                raise outcome
        assert not isinstance(valid, BaseException) and not isinstance(heads, BaseException)
        if valid[0] != 0:
            raise WorkspaceError(
                f"{target!r} is not a valid branch name; fix the pipeline's `branch:`"
            )
        existed = target in heads
        start = target if existed else base
        if start not in heads:
            raise WorkspaceError(
                f"neither {target!r} nor the base branch {base!r} exists in {repo}: "
                "set `base:` in the pipeline to an existing branch"
            )
        # Writing files is most of a workspace's cost: one checkout worker per core.
        # Measured with bench/workspace.py: where creating a file costs ~0.5 ms, two
        # workers cut a 2,000-file checkout from ~1.45 s to ~0.93 s; on tmpfs (~0.013 ms)
        # one worker would be ~5 ms faster. The slow disk is the case worth winning.
        await run_git(
            "-c", "checkout.workers=0",
            "checkout", "--quiet", "--no-track", "-B", target, heads[start],
            cwd=clone, env=env,
        )  # fmt: skip
        return heads[start], target, existed

    async def _discard(self, root: Path, lease: Path) -> None:
        giving = self.giving.pop(root, None)
        if giving is not None:
            await to_the_end(giving)
        # The clone goes before its lease, so gc never runs under a live clone.
        try:
            await remove_dir(root)  # awaited, not a task: its disk is unmounted at once
        finally:
            self._held.pop(root, None)
            lease.unlink(missing_ok=True)


def directory_name(key: str) -> str:
    """A session's directory name: its key made safe for a path, and a digest of the
    key itself, so that no two keys share a directory (`o/a_b#1` and `o/a#b_1` would)
    and no session's `create()` removes another's live workspace."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{_KEY.sub('_', key)[:80]}-{digest}"


def _refuse_credentials(url: str) -> None:
    parts = urlsplit(url)
    if parts.password or (parts.username and parts.scheme in ("http", "https")):
        raise WorkspaceError(
            "the clone URL carries credentials; give it without them and let git_auth "
            "supply a token per command, so no token is written to the mirror's config"
        )
