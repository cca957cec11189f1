"""What a repository's rulesets require of a branch, and what a merge into it violates.

The sandbox models four of GitHub's rule types: `merge_queue`, `pull_request`
(required approving reviews, allowed merge methods), `required_status_checks`
and `required_linear_history`. Only `active` rulesets bind, as on GitHub.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from ballet.sandbox import gitcache, gitrepo
from ballet.sandbox.repo_settings import REFUSALS
from ballet.sandbox.state import Pull, Repo, permission_at_least

MODELLED = ("merge_queue", "pull_request", "required_status_checks", "required_linear_history")
# GitHub's conclusions and states that let a required check pass.
PASSING = {"success", "neutral", "skipped"}
RULE_VIOLATIONS = "Repository rule violations found"
THROUGH_THE_QUEUE = "Changes must be made through the merge queue"


def applies(repo: Repo, include: list[str], exclude: list[str], branch: str) -> bool:
    """Whether `conditions.ref_name` matches `branch` (fnmatch patterns of full refs)."""
    ref = f"refs/heads/{branch}"

    def matches(pattern: str) -> bool:
        if pattern == "~ALL":
            return True
        if pattern == "~DEFAULT_BRANCH":
            return branch == repo.default_branch
        return fnmatch.fnmatchcase(ref, pattern)

    return any(matches(p) for p in include) and not any(matches(p) for p in exclude)


def branch_rules(repo: Repo, branch: str) -> list[tuple[int, dict[str, Any]]]:
    """Every rule of the active rulesets that apply to `branch`, with its ruleset's id."""
    return [
        (ruleset.id, rule)
        for ruleset in sorted(repo.rulesets.values(), key=lambda r: r.id)
        if ruleset.enforcement == "active"
        and applies(repo, ruleset.include, ruleset.exclude, branch)
        for rule in ruleset.rules
    ]


def rules_of(repo: Repo, branch: str, kind: str) -> list[dict[str, Any]]:
    return [
        rule.get("parameters") or {}
        for _, rule in branch_rules(repo, branch)
        if rule["type"] == kind
    ]


def queue_rule(repo: Repo, branch: str) -> dict[str, Any] | None:
    """The `merge_queue` rule's parameters where the branch requires the queue."""
    found = rules_of(repo, branch, "merge_queue")
    return found[0] if found else None


def required_contexts(repo: Repo, branch: str) -> list[str]:
    contexts: list[str] = []
    for params in rules_of(repo, branch, "required_status_checks"):
        for check in params.get("required_status_checks", []):
            if check["context"] not in contexts:
                contexts.append(check["context"])
    return contexts


def check_results(repo: Repo, sha: str) -> dict[str, str]:
    """Each check name and status context reported on `sha`: `success` (it passed),
    `failure` (it concluded otherwise) or `pending`; the latest report of a name wins."""
    results: dict[str, str] = {}
    for run in sorted((r for r in repo.runs.values() if r.head_sha == sha), key=lambda r: r.id):
        if run.status != "completed":
            results[run.name] = "pending"
        else:
            results[run.name] = "success" if run.conclusion in PASSING else "failure"
    for status in (s for s in repo.statuses if s.sha == sha):
        results[status.context] = {"success": "success", "pending": "pending"}.get(
            status.state, "failure"
        )
    return results


def _approvals(repo: Repo, pr: Pull, head_only: bool) -> int:
    """People with write access whose latest approving or rejecting review approves."""
    latest: dict[str, str] = {}
    for review in sorted(repo.reviews.values(), key=lambda r: r.id):
        if review.pull_number != pr.number or review.state == "COMMENTED":
            continue
        if head_only and review.commit_id != pr.head_sha:
            continue
        latest[review.user] = review.state
    return sum(
        1
        for login, state in latest.items()
        if state == "APPROVED" and permission_at_least(repo.permission_of(login), "write")
    )


def _check_violations(repo: Repo, sha: str, contexts: list[str]) -> list[str]:
    if not contexts:
        return []
    results = check_results(repo, sha)
    lines = []
    for context in contexts:
        result = results.get(context, "pending")
        if result != "success":
            word = "is expected." if result == "pending" else "is failing."
            lines.append(f'Required status check "{context}" {word}')
    return lines


def merge_violations(repo: Repo, pr: Pull, method: str, *, enqueuing: bool = False) -> list[str]:
    """What the base branch's rules forbid of merging `pr` with `method` now, in GitHub's
    words. `enqueuing`: what they require before the pull request may join the merge
    queue (everything but the queue itself, the merge method and being up to date)."""
    lines: list[str] = []
    if not enqueuing and queue_rule(repo, pr.base_ref) is not None:
        lines.append(THROUGH_THE_QUEUE)
    for params in rules_of(repo, pr.base_ref, "pull_request"):
        allowed = params.get("allowed_merge_methods")
        if not enqueuing and allowed is not None and method not in allowed:
            lines.append(REFUSALS[method])
        needed = int(params.get("required_approving_review_count", 0))
        head_only = bool(params.get("dismiss_stale_reviews_on_push"))
        if needed and _approvals(repo, pr, head_only) < needed:
            reviews = "approving review is" if needed == 1 else "approving reviews are"
            lines.append(f"At least {needed} {reviews} required by reviewers with write access.")
    lines += _check_violations(repo, pr.head_sha, required_contexts(repo, pr.base_ref))
    if not enqueuing:
        if out_of_date(repo, pr):
            lines.append("This branch is out-of-date with the base branch.")
        if method == "merge" and rules_of(repo, pr.base_ref, "required_linear_history"):
            lines.append("This branch must not contain merge commits.")
    return list(dict.fromkeys(lines))


def out_of_date(repo: Repo, pr: Pull) -> bool:
    """Whether a strict status-check rule wants the head up to date with the base and
    it is not."""
    strict = any(
        p.get("strict_required_status_checks_policy")
        for p in rules_of(repo, pr.base_ref, "required_status_checks")
    )
    if not strict:
        return False
    base = gitcache.branch(repo, pr.base_ref)
    return base is not None and not gitrepo.is_ancestor(repo.path, base, pr.head_sha)


def refusal(lines: list[str]) -> str:
    """GitHub's message for a merge the rules refuse."""
    return RULE_VIOLATIONS + "\n\n" + "\n\n".join(lines) + "\n\n"
