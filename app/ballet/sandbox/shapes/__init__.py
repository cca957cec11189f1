"""GitHub's JSON shapes, built from sandbox state; each parses with githubkit's models.

Every builder takes the server's base URL so that the `url` fields point back at
the sandbox (githubkit follows none of them, but people and logs do).
"""

from ballet.sandbox.shapes.checks import (
    annotation,
    check_run,
    check_suite,
    simple_commit,
    status,
)
from ballet.sandbox.shapes.common import (
    EVENTS,
    JSON,
    PERMISSIONS,
    REACTIONS,
    app,
    author_association,
    ci_app,
    clone_url,
    installation,
    iso,
    node_id,
    reactions_rollup,
    repo_api,
    repo_html,
    repo_permissions,
    repository,
    user,
    user_id,
    webhook_installation,
)
from ballet.sandbox.shapes.git import branch, commit, diff_entry, git_actor, git_ref, push_commit
from ballet.sandbox.shapes.issues import comment, issue, label, reaction
from ballet.sandbox.shapes.pulls import pull, pull_list_item, review, review_comment

__all__ = [
    "EVENTS",
    "JSON",
    "PERMISSIONS",
    "REACTIONS",
    "annotation",
    "app",
    "author_association",
    "branch",
    "check_run",
    "check_suite",
    "ci_app",
    "clone_url",
    "comment",
    "commit",
    "diff_entry",
    "git_actor",
    "git_ref",
    "installation",
    "iso",
    "issue",
    "label",
    "node_id",
    "pull",
    "pull_list_item",
    "push_commit",
    "reaction",
    "reactions_rollup",
    "repo_api",
    "repo_html",
    "repo_permissions",
    "repository",
    "review",
    "review_comment",
    "simple_commit",
    "status",
    "user",
    "user_id",
    "webhook_installation",
]
