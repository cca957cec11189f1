"""Git reads the sandbox's handlers repeat, answered without a `git` process when
the answer cannot have changed.

Each `gitrepo` call is a synchronous `git` subprocess on the sandbox's one event
loop: at a thousand tickets in flight they were 20–30% of its samples, every
request and webhook waiting behind them. Two kinds of answer are kept:

- **A repository's refs, read while no ref write can be under way.** Every ref
  write holds `repo.ref_lock` (the REST API, merges, a push over HTTP from before
  its first ref update until its webhooks are made), and releasing the lock drops
  the refs kept. A read while the lock is held asks git, as before: the writer
  itself, and anyone reading during a push, sees git's refs of that moment.
- **What commit shas fix**: that a full sha names a commit, a commit's fields, and
  for a (base, head) pair of commits whether they merge and what the pull request
  changes. Objects are never removed from the sandbox's repositories.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ballet.sandbox import gitrepo

# Pairs kept per repository before starting over: a pull request's (base, head) moves
# with every push and merge, and old pairs are rarely asked for again.
MAX_PAIRS = 2000


class RefLock(asyncio.Lock):
    """`Repo.ref_lock`: held by every ref write. Keeps the refs git listed while it was
    free; its release drops them (the holder may have moved any)."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: dict[str, str] | None = None

    def release(self) -> None:
        self.refs = None
        super().release()


@dataclass
class GitMemo:
    """A repository's answers fixed by commit shas (see the module's doc)."""

    commits: set[str] = field(default_factory=set)
    infos: dict[str, gitrepo.CommitInfo] = field(default_factory=dict)
    merges: dict[tuple[str, str], bool] = field(default_factory=dict)
    changes: dict[tuple[str, str], list[gitrepo.FileChange]] = field(default_factory=dict)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)


class Repo(Protocol):
    """What the cache needs of `state.Repo` (named here, not imported: state holds
    the cache, and a module importing back would be a circle)."""

    @property
    def path(self) -> Path: ...
    @property
    def ref_lock(self) -> RefLock: ...
    @property
    def git_memo(self) -> GitMemo: ...


def refs(repo: Repo) -> dict[str, str]:
    """`gitrepo.refs`: every ref and its sha."""
    lock = repo.ref_lock
    if not isinstance(lock, RefLock) or lock.locked():
        return gitrepo.refs(repo.path)
    if lock.refs is None:
        lock.refs = gitrepo.refs(repo.path)
    return dict(lock.refs)


def branch(repo: Repo, name: str) -> str | None:
    """`gitrepo.resolve(path, "refs/heads/<name>")`: the commit a branch is at, or None."""
    if repo.ref_lock.locked():
        return gitrepo.resolve(repo.path, f"refs/heads/{name}")
    sha = refs(repo).get(f"refs/heads/{name}")
    # Not a branch: git's answer (None, or a ref rev-parse finds by another rule).
    return gitrepo.resolve(repo.path, f"refs/heads/{name}") if sha is None else commit(repo, sha)


def commit(repo: Repo, rev: str) -> str | None:
    """`gitrepo.resolve`: the commit `rev` names, or None; kept for a full commit sha."""
    if rev in repo.git_memo.commits:
        return rev
    sha = gitrepo.resolve(repo.path, rev)
    if sha is not None and sha == rev:  # a commit's own sha: no name that can move
        repo.git_memo.commits.add(sha)
    return sha


def commit_info(repo: Repo, sha: str) -> gitrepo.CommitInfo:
    """`gitrepo.commit_info`, kept when asked by the commit's own sha."""
    info = repo.git_memo.infos.get(sha)
    if info is None:
        info = gitrepo.commit_info(repo.path, sha)
        if info.sha == sha:
            repo.git_memo.infos[sha] = info
            repo.git_memo.commits.add(sha)
    return info


def merges(repo: Repo, base: str, head: str) -> bool:
    """Whether commit `head` merges into commit `base` without a conflict."""
    memo = _pairs(repo.git_memo)
    if (base, head) not in memo.merges:
        memo.merges[base, head] = gitrepo.merge_tree(repo.path, base, head) is not None
    return memo.merges[base, head]


def changed_files(repo: Repo, base: str, head: str) -> list[gitrepo.FileChange]:
    """`gitrepo.changed_files` of two commits."""
    memo = _pairs(repo.git_memo)
    if (base, head) not in memo.changes:
        memo.changes[base, head] = gitrepo.changed_files(repo.path, base, head)
    return list(memo.changes[base, head])


def commits_between(repo: Repo, base: str, head: str) -> int:
    """How many commits `head` has that `base` has not."""
    memo = _pairs(repo.git_memo)
    if (base, head) not in memo.counts:
        memo.counts[base, head] = len(gitrepo.commits_between(repo.path, base, head))
    return memo.counts[base, head]


def _pairs(memo: GitMemo) -> GitMemo:
    if len(memo.merges) + len(memo.changes) + len(memo.counts) > MAX_PAIRS:
        memo.merges.clear()
        memo.changes.clear()
        memo.counts.clear()
    return memo
