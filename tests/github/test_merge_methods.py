"""Telling a merge method the repository disallows from GitHub's other 405s."""

from __future__ import annotations

from ballet.github.forge import ForgeError
from ballet.github.merge_methods import MergeSettings, refused_method

PUT = "PUT /repos/o/r/pulls/1/merge: 405 "
HIDDEN = MergeSettings()  # what a caller without admin rights is shown


def test_githubs_words_suffice_when_the_settings_are_hidden() -> None:
    error = ForgeError(PUT + "Squash merges are not allowed on this repository.", status=405)
    assert refused_method("squash", error, HIDDEN) == (
        "Squash merges are not allowed on this repository"
    )


def test_a_pull_request_github_will_not_merge_yet_is_not_a_refused_method() -> None:
    protected = ForgeError(PUT + "Required status check is expected.", status=405)
    assert refused_method("squash", protected, HIDDEN) is None
    allowed = MergeSettings(allow_squash_merge=True)
    words = ForgeError(PUT + "Squash merges are not allowed on this repository.", status=405)
    assert refused_method("squash", words, allowed) is None  # the setting says otherwise
    conflict = ForgeError("PUT ...: 409 Head branch was modified.", status=409)
    assert refused_method("squash", conflict, MergeSettings(allow_squash_merge=False)) is None


def test_visible_settings_name_what_the_repository_allows() -> None:
    settings = MergeSettings(
        allow_merge_commit=True, allow_squash_merge=False, allow_rebase_merge=True
    )
    error = ForgeError(PUT + "Method not allowed", status=405)
    assert refused_method("squash", error, settings) == (
        "squash is not allowed; it allows: merge, rebase"
    )
    assert settings.allowed_methods() == ("merge", "rebase")
    assert MergeSettings(allow_merge_commit=True).allowed_methods() is None
