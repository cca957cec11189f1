"""What follows a change of refs, by a git push or by the REST API.

Push webhooks for each moved ref, `pull_request.synchronize` for open pull
requests whose head branch moved, and CI for each new branch tip.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ballet.sandbox import ci, events, gitrepo, shapes
from ballet.sandbox.state import Repo, Sandbox

ZERO = gitrepo.ZERO_SHA


def refs_changed(
    sb: Sandbox, repo: Repo, before: dict[str, str], after: dict[str, str], pusher: str
) -> None:
    for ref in sorted(set(before) | set(after)):
        old, new = before.get(ref, ZERO), after.get(ref, ZERO)
        if old != new:
            ref_moved(sb, repo, ref, old, new, pusher)


def ref_moved(sb: Sandbox, repo: Repo, ref: str, old: str, new: str, pusher: str) -> None:
    repo.pushed_at = datetime.now(UTC)
    forced = old != ZERO and new != ZERO and not gitrepo.is_ancestor(repo.path, old, new)
    # GitHub lists the pushed commits (at most 20): for a new branch, those on no other.
    others = (
        tuple({sha for name, sha in gitrepo.refs(repo.path).items() if name != ref})
        if old == ZERO
        else ()
    )
    new_commits = (
        []
        if new == ZERO
        else gitrepo.commits_between(repo.path, None if forced else old, new, others)
    )
    commits = [shapes.push_commit(sb, repo, c) for c in new_commits][-20:]
    events.push(sb, repo, ref, old, new, pusher, commits, forced)
    if not ref.startswith("refs/heads/") or new == ZERO:
        return
    branch = ref.removeprefix("refs/heads/")
    for pr in repo.pulls.values():
        issue = repo.issues[pr.number]
        if pr.head_ref == branch and issue.state == "open" and pr.head_sha != new:
            pr.head_sha = new
            issue.updated_at = datetime.now(UTC)
            events.pull_request(sb, repo, pr.number, "synchronize", pusher, before=old, after=new)
    sb.branch_moved(repo, branch, pusher)
    ci.start(sb, repo, new, branch, None if old == ZERO else old)
