"""Refs, commits and branches, in REST's shapes and in the push webhook's."""

from __future__ import annotations

import zlib

from ballet.sandbox.gitrepo import CommitInfo, FileChange, files_of_commit
from ballet.sandbox.shapes.common import JSON, node_id, repo_api, repo_html
from ballet.sandbox.state import Repo, Sandbox


def git_ref(sb: Sandbox, repo: Repo, ref: str, sha: str) -> JSON:
    return {
        "ref": ref,
        "node_id": node_id("Ref", zlib.crc32(ref.encode())),
        "url": f"{repo_api(sb, repo)}/git/{ref}",
        "object": {"type": "commit", "sha": sha, "url": f"{repo_api(sb, repo)}/git/commits/{sha}"},
    }


def git_actor(name: str, email: str, date: str) -> JSON:
    return {"name": name, "email": email, "date": date}


def commit(sb: Sandbox, repo: Repo, info: CommitInfo) -> JSON:
    api = f"{repo_api(sb, repo)}/commits/{info.sha}"
    return {
        "url": api,
        "sha": info.sha,
        "node_id": node_id("Commit", zlib.crc32(info.sha.encode())),
        "html_url": f"{repo_html(sb, repo)}/commit/{info.sha}",
        "comments_url": f"{api}/comments",
        "commit": {
            "url": f"{repo_api(sb, repo)}/git/commits/{info.sha}",
            "author": git_actor(info.author_name, info.author_email, info.timestamp),
            "committer": git_actor(info.committer_name, info.committer_email, info.timestamp),
            "message": info.message,
            "comment_count": 0,
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
            "tree": {"sha": info.tree, "url": f"{repo_api(sb, repo)}/git/trees/{info.tree}"},
        },
        "author": None,
        "committer": None,
        "parents": [{"sha": p, "url": f"{repo_api(sb, repo)}/commits/{p}"} for p in info.parents],
    }


def branch(sb: Sandbox, repo: Repo, name: str, info: CommitInfo) -> JSON:
    api = f"{repo_api(sb, repo)}/branches/{name}"
    return {
        "name": name,
        "commit": commit(sb, repo, info),
        "_links": {"self": api, "html": f"{repo_html(sb, repo)}/tree/{name}"},
        "protected": False,
        "protection": {"enabled": False},
        "protection_url": f"{api}/protection",
    }


def push_commit(sb: Sandbox, repo: Repo, info: CommitInfo) -> JSON:
    """A commit as the push webhook lists it (not the REST commit shape)."""
    return {
        "id": info.sha,
        "tree_id": info.tree,
        "distinct": True,
        "message": info.message,
        "timestamp": info.timestamp,
        "url": f"{repo_html(sb, repo)}/commit/{info.sha}",
        "author": {"name": info.author_name, "email": info.author_email, "username": None},
        "committer": {"name": info.committer_name, "email": info.committer_email},
        # Ballet reads these to know whether a push to the default branch changed its config.
        **files_of_commit(repo.path, info.sha),
    }


def diff_entry(sb: Sandbox, repo: Repo, change: FileChange, ref: str) -> JSON:
    """One changed file, as a pull request's files and a comparison list them."""
    html = repo_html(sb, repo)
    return {
        "sha": change.sha,
        "filename": change.filename,
        "status": change.status,
        "additions": change.additions,
        "deletions": change.deletions,
        "changes": change.additions + change.deletions,
        "blob_url": f"{html}/blob/{ref}/{change.filename}",
        "raw_url": f"{html}/raw/{ref}/{change.filename}",
        "contents_url": f"{repo_api(sb, repo)}/contents/{change.filename}?ref={ref}",
    }
