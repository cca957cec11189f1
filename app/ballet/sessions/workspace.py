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

from ballet.sessions.cloning import Cloned, clone_branch
from ballet.sessions.cloning import GitIdentity as GitIdentity
from ballet.sessions.cloning import WorkspaceError as WorkspaceError
from ballet.sessions.disk import mount_limited, move_mount
from ballet.sessions.git import GitError, git_environment, run_git
from ballet.sessions.git_auth import auth_environment
from ballet.sessions.leftovers import remove_dir, remove_stale, to_the_end
from ballet.sessions.mirror import gc_mirror, init_mirror, locked
from ballet.sessions.prepared import PreparedClones
from ballet.sessions.remote_refs import Looks, UnknownRefs, unmoved

_KEY = re.compile(r"[^A-Za-z0-9_.-]+")
# How long a fetch counts as fresh for a refresh asked `since` its start: long enough
# for a session job to follow its launch, far shorter than anything a person does.
FRESH_SECONDS = 5.0


log = structlog.get_logger("ballet.sessions.workspace")


class _NotPrepared(Exception):
    """No clone prepared from the refs asked for: the session refreshes and creates."""


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
        self.identity = identity or GitIdentity()
        git_home = self.root / "git-home"
        git_home.mkdir(parents=True, exist_ok=True)
        self.git_env = git_environment(os.environ if parent_env is None else parent_env, git_home)
        # Per mirror: when this process's last successful fetch (or a look finding nothing
        # to fetch) began and ended.
        self._fetched: dict[Path, tuple[float, float]] = {}
        self._refreshing: dict[Path, int] = {}  # refreshes under way, by mirror
        # GitHub's refs, asked per mirror; `refs_http`'s owner closes it, and without
        # one a refresh always fetches.
        self._looks = Looks(refs_http, FRESH_SECONDS)
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
        asked = began if since is None else since
        ask = existed and not self._fresh(mirror, since) and mirror not in self._refreshing
        look = self._looks.since(mirror, clone_url, token, asked) if ask else None
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
                    look = self._looks.since(mirror, clone_url, token, asked)
                if look is not None and await unmoved(look.task, mirror, self.git_env):
                    self._fetched[mirror] = (look.began, time.monotonic())
                    return mirror
                await self._fetch(repo, mirror, clone_url, token)
        finally:
            self._refreshing[mirror] -= 1
            if not self._refreshing[mirror]:
                del self._refreshing[mirror]
        return mirror

    async def take_prepared(
        self,
        repo: str,
        clone_url: str,
        token: str | None,
        *,
        key: str,
        branch: str | None,
        base: str,
        since: float | None = None,
        disk: int | None = None,
    ) -> Workspace | None:
        """The clone prepared ahead of `branch` (prepared.py) as this session's workspace,
        when GitHub's heads and tags, asked at or after `since` (None: now), are exactly
        the refs it was made from: it is then the clone a fetch and a fresh clone would
        give, and neither is waited for, nor the mirror's lock (the last session's push
        going into the mirror holds it). None otherwise: `refresh`, then `create`."""
        _refuse_credentials(clone_url)
        mirror = self.mirror_path(repo)
        if not self.prepared.holds(mirror, _prepared_key(branch, base)):
            return None
        look = self._looks.since(
            mirror, clone_url, token, time.monotonic() if since is None else since
        )
        if look is None:
            return None
        try:
            github = await look.task
        except (UnknownRefs, httpx.HTTPError, httpx.InvalidURL) as exc:
            log.info("remote refs unknown: no prepared clone taken", reason=repr(exc))
            return None
        try:
            return await self.create(
                repo, key=key, branch=branch, base=base, disk=disk, github_refs=github
            )
        except _NotPrepared:
            return None

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
        self,
        repo: str,
        *,
        key: str,
        branch: str | None,
        base: str,
        disk: int | None = None,
        github_refs: Mapping[str, str] | None = None,
    ) -> Workspace:
        """A fresh clone of `branch` (made from `base` when it does not exist yet). With
        `disk`, the whole workspace is a tmpfs of that many bytes, /tmp included.
        `github_refs`: only the clone prepared from exactly these refs (take_prepared)."""
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
        if github_refs is None:
            async with locked(mirror):  # no gc is under way, nor starts, while it is held
                _write_lease(lease, root)
        else:  # the prepared clone's own lease keeps gc away until it is taken
            _write_lease(lease, root)
        self._held[root] = lease
        try:
            root.mkdir(parents=True)
            claimed = await self._claim(mirror, root, branch, base, disk, github_refs)
            if claimed is None and github_refs is not None:
                raise _NotPrepared
            if disk is not None and claimed is None:
                self._refuse_when_closed()  # in the same step as the mount: none after aclose
                mount_limited(root, disk)
            home.mkdir()
            files.mkdir()
            if tmp is not None:
                tmp.mkdir()
                tmp.chmod(0o1777)  # as /tmp is
            made = claimed or await self._clone(mirror, clone, branch, base, repo)
        except OSError as error:
            await self._discard(root, lease)
            raise WorkspaceError(f"could not make the session's workspace: {error}") from error
        except BaseException:
            await self._discard(root, lease)
            raise
        return Workspace(
            key, root, clone, home, files, mirror, lease, made.branch, made.start_sha,
            made.existed, tmp, prepared=claimed is not None,
        )  # fmt: skip

    def prepare(self, repo: str, *, branch: str, base: str, disk: int | None = None) -> None:
        """Begin making the next session's clone of `branch` now (prepared.py); call
        once this session's processes are gone and its push is in the mirror."""
        mirror = self.mirror_path(repo)
        if not (mirror / "HEAD").exists():
            return

        async def make(source: Path, clone: Path) -> Cloned:
            return await self._clone(source, clone, branch, base, repo)

        name = directory_name(f"{repo}:{branch}")
        self.prepared.start(mirror, _prepared_key(branch, base), name, make, self.git_env, disk)

    async def unprepare(self, repo: str, *, branch: str, base: str) -> None:
        """Drop the clone `prepare` began: no session of the branch is next."""
        await self.prepared.drop(self.mirror_path(repo), _prepared_key(branch, base))

    async def _claim(
        self,
        mirror: Path,
        root: Path,
        branch: str | None,
        base: str,
        disk: int | None,
        github_refs: Mapping[str, str] | None,
    ) -> Cloned | None:
        """The clone prepared of this branch moved into `root` (with the disk it was
        made on, if any), if it is still what a fresh clone would be."""
        key = _prepared_key(branch, base)
        prepared = await self.prepared.claim(mirror, key, self.git_env, disk, github_refs)
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
        return prepared.cloned

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
    ) -> Cloned:
        return await clone_branch(
            mirror, clone, branch=branch, base=base, repo=repo, identity=self.identity,
            env=self.git_env,
        )  # fmt: skip

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


def _prepared_key(branch: str | None, base: str) -> str:
    return f"{branch or base}\n{base}"


def _write_lease(lease: Path, root: Path) -> None:
    lease.parent.mkdir(exist_ok=True)
    lease.write_text(str(root))


def _refuse_credentials(url: str) -> None:
    parts = urlsplit(url)
    if parts.password or (parts.username and parts.scheme in ("http", "https")):
        raise WorkspaceError(
            "the clone URL carries credentials; give it without them and let git_auth "
            "supply a token per command, so no token is written to the mirror's config"
        )
