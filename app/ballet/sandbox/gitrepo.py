"""Bare repository plumbing: every change the REST API makes to git goes through here.

Synchronous `git` subprocesses against a bare repository; each call takes
milliseconds, so handlers call them directly, and through `gitcache` for the
reads they repeat (under load, these calls were a quarter of the sandbox's loop).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ZERO_SHA = "0" * 40
IDENTITY = {
    "GIT_AUTHOR_NAME": "Sandbox",
    "GIT_AUTHOR_EMAIL": "sandbox@users.noreply.github.com",
    "GIT_COMMITTER_NAME": "GitHub",
    "GIT_COMMITTER_EMAIL": "noreply@github.com",
}


class GitError(Exception):
    """A git command failed; the message carries its stderr."""


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    committer_name: str
    committer_email: str
    timestamp: str  # ISO 8601, committer date
    message: str


def git(
    repo: Path, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None
) -> bytes:
    full_env = {**os.environ, **IDENTITY, **(env or {})}
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], input=input, capture_output=True, env=full_env
    )
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def init_bare(path: Path, default_branch: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "init", "--quiet", "--bare", f"--initial-branch={default_branch}", str(path)],
        check=True,
    )
    # Pushes over smart HTTP are allowed once the sandbox has authenticated the pusher.
    git(path, "config", "http.receivepack", "true")


def commit_files(path: Path, files: Mapping[str, str], message: str, parents: list[str]) -> str:
    """Write `files` as a new tree (no parent tree inherited) and commit it; return the sha."""
    with tempfile.TemporaryDirectory() as tmp:
        index_env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        for name, text in files.items():
            blob = git(path, "hash-object", "-w", "--stdin", input=text.encode()).decode().strip()
            git(
                path, "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}", env=index_env
            )
        tree = git(path, "write-tree", env=index_env).decode().strip()
    return commit_tree(path, tree, parents, message)


def commit_tree(
    path: Path, tree: str, parents: list[str], message: str, env: Mapping[str, str] | None = None
) -> str:
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return git(path, *args, "-m", message, env=env).decode().strip()


def resolve(path: Path, rev: str) -> str | None:
    try:
        return git(path, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
    except GitError:
        return None


def refs(path: Path) -> dict[str, str]:
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)").decode()
    pairs = (line.split(" ", 1) for line in out.splitlines() if line)
    return {ref: sha for ref, sha in pairs}


def update_ref(path: Path, ref: str, new: str, old: str | None = None) -> None:
    git(path, "update-ref", ref, new, *([old] if old else []))


def delete_ref(path: Path, ref: str) -> None:
    git(path, "update-ref", "-d", ref)


def is_ancestor(path: Path, ancestor: str, descendant: str) -> bool:
    try:
        git(path, "merge-base", "--is-ancestor", ancestor, descendant)
        return True
    except GitError:
        return False


def merge_base(path: Path, a: str, b: str) -> str | None:
    """The best common ancestor of two commits; None for histories that never met."""
    try:
        return git(path, "merge-base", a, b).decode().strip() or None
    except GitError:
        return None


def merge_tree(path: Path, base: str, head: str) -> str | None:
    """The tree of merging `head` into `base`, or None on a conflict."""
    try:
        out = git(path, "merge-tree", "--write-tree", "--no-messages", base, head)
    except GitError:
        return None
    return out.decode().splitlines()[0].strip()


_LOG_FORMAT = "%H%x00%T%x00%P%x00%an%x00%ae%x00%cn%x00%ce%x00%cI%x00%B%x1e"


def commits_between(
    path: Path, base: str | None, head: str, exclude: tuple[str, ...] = ()
) -> list[CommitInfo]:
    """Commits reachable from `head` and not from `base` nor `exclude`, oldest first."""
    span = [f"{base}..{head}"] if base and base != ZERO_SHA else [head]
    span += [f"^{sha}" for sha in exclude]
    out = git(path, "log", "--reverse", f"--format={_LOG_FORMAT}", *span, "--")
    return _parse_log(out.decode())


def commit_info(path: Path, sha: str) -> CommitInfo:
    return _parse_log(git(path, "log", "-1", f"--format={_LOG_FORMAT}", sha).decode())[0]


def _parse_log(out: str) -> list[CommitInfo]:
    infos = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, tree, parents, an, ae, cn, ce, date, message = record.split("\x00")
        infos.append(
            CommitInfo(sha, tree, tuple(parents.split()), an, ae, cn, ce, date, message.strip())
        )
    return infos


def object_at(path: Path, rev: str, file: str) -> tuple[str, str] | None:
    """(type, sha) of `file` at `rev`, or None when absent."""
    spec = f"{rev}:{file}" if file else f"{rev}^{{tree}}"
    try:
        sha = git(path, "rev-parse", "--verify", "--quiet", spec).decode().strip()
        kind = git(path, "cat-file", "-t", sha).decode().strip()
    except GitError:
        return None
    return kind, sha


def read_blob(path: Path, sha: str) -> bytes:
    return git(path, "cat-file", "blob", sha)


def list_tree(path: Path, tree: str) -> list[tuple[str, str, str, int]]:
    """(type, sha, name, size) of a tree's entries."""
    out = git(path, "ls-tree", "-l", tree).decode()
    entries = []
    for line in out.splitlines():
        meta, name = line.split("\t", 1)
        _, kind, sha, size = meta.split()
        entries.append((kind, sha, name, int(size) if size != "-" else 0))
    return entries


def rebase_onto(path: Path, onto: str, commits: list[CommitInfo]) -> str | None:
    """Replay `commits` on `onto` in a throwaway worktree; the new tip, or None on a conflict.

    The worktree shares the bare repository's object store, so the new commits
    are already in the repository when it is removed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "w"
        git(path, "worktree", "add", "--detach", "--quiet", str(worktree), onto)
        try:
            for commit in commits:
                try:
                    git(
                        worktree,
                        "cherry-pick",
                        "--allow-empty",
                        "--keep-redundant-commits",
                        commit.sha,
                    )
                except GitError:
                    return None
            return git(worktree, "rev-parse", "HEAD").decode().strip()
        finally:
            git(path, "worktree", "remove", "--force", str(worktree))


@dataclass(frozen=True)
class FileChange:
    status: str  # GitHub's words: added | removed | modified | renamed
    filename: str
    additions: int
    deletions: int
    sha: str  # the blob at head (zeros when removed)


_STATUS_WORDS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "T": "changed"}


def files_of_commit(path: Path, sha: str) -> dict[str, list[str]]:
    """What a commit added, removed and modified against its first parent (a root
    commit: everything added), as a push webhook lists each commit's files."""
    args = ("diff-tree", "-r", "--root", "--no-commit-id", "--name-status", "-z", "--no-renames")
    out = git(path, *args, sha).decode().split("\0")
    files: dict[str, list[str]] = {"added": [], "removed": [], "modified": []}
    for letter, name in zip(out[0::2], out[1::2], strict=False):
        if letter:
            files[{"A": "added", "D": "removed"}.get(letter[0], "modified")].append(name)
    return files


def _count(numstat: str) -> int:
    return 0 if numstat == "-" else int(numstat)  # "-" is git's word for a binary file


def changed_files(path: Path, base: str, head: str) -> list[FileChange]:
    """The files a pull request changes: head against its merge base with base, as GitHub."""
    merge_base = git(path, "merge-base", base, head).decode().strip()
    numstat = git(path, "diff", "--numstat", "-z", "--no-renames", merge_base, head).decode()
    counts: dict[str, tuple[int, int]] = {}
    for record in numstat.split("\0"):
        if record:
            added, deleted, name = record.split("\t", 2)
            counts[name] = (_count(added), _count(deleted))
    statuses = git(path, "diff", "--name-status", "-z", "--no-renames", merge_base, head)
    fields = statuses.decode().split("\0")
    changes = []
    for letter, name in zip(fields[0::2], fields[1::2], strict=False):
        if not letter:
            continue
        found = object_at(path, head, name)
        additions, deletions = counts.get(name, (0, 0))
        changes.append(
            FileChange(
                _STATUS_WORDS.get(letter[0], "modified"),
                name,
                additions,
                deletions,
                found[1] if found else ZERO_SHA,
            )
        )
    return changes
