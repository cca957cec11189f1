"""The question a ticket asks when the repository disallows its merge method.

No rework changes a repository setting, so the ticket does not go back to
Implement nor try again by itself: a person changes the setting (or merges by
hand), and says `/ballet retry`.
"""

from __future__ import annotations

# The repository settings' checkboxes on GitHub, by merge method.
SETTING_NAMES = {
    "merge": "Allow merge commits",
    "squash": "Allow squash merging",
    "rebase": "Allow rebase merging",
}


def method_refused(method: str, detail: str) -> str:
    """The question when the repository does not allow the pinned merge method."""
    others = ", ".join(f"`{m}`" for m in ("squash", "merge", "rebase") if m != method)
    said = f" (GitHub: {detail})" if detail else ""
    return (
        f"GitHub refused to merge the pull request with the `{method}` method: the "
        f'repository does not allow it{said}. Either turn on "{SETTING_NAMES[method]}" '
        "(Settings → General → Pull Requests) and `/ballet retry`, or merge the pull "
        "request yourself. For later tickets, `merge: {method: ...}` in .ballet.yml "
        f"can name one the repository allows ({others})."
    )
