"""The sandbox timeline's index (sandbox/references.py): every form that names an
issue is noted under that issue's repository and number, whatever the case of the
repository's name; edits and deletions take old notes away."""

from __future__ import annotations

from ballet.sandbox.references import References


def test_each_form_is_noted_under_the_repository_it_names() -> None:
    refs = References()
    refs.note("octo/demo", "comment", 1, "fixes #12 and Acme/Other#3, not #12x")
    refs.note("octo/demo", "issue", 7, "see http://127.0.0.1:8000/Acme/other/pull/3 too")
    refs.note("acme/other", "comment", 2, "back to octo/demo#12 and #4")
    assert refs.naming("octo/demo", 12) == [
        ("octo/demo", "comment", 1),
        ("acme/other", "comment", 2),
    ]
    assert refs.naming("acme/other", 3) == [("octo/demo", "comment", 1), ("octo/demo", "issue", 7)]
    assert refs.naming("acme/other", 4) == [("acme/other", "comment", 2)]
    assert refs.naming("octo/demo", 4) == []


def test_an_edit_or_a_deletion_takes_old_notes_away() -> None:
    refs = References()
    refs.note("octo/demo", "comment", 1, "fixes #12")
    refs.note("octo/demo", "comment", 1, "fixes #13")
    assert refs.naming("octo/demo", 12) == []
    assert refs.naming("octo/demo", 13) == [("octo/demo", "comment", 1)]
    refs.forget("octo/demo", "comment", 1)
    assert refs.naming("octo/demo", 13) == []
    refs.note("octo/demo", "issue", 2, None)
    assert refs.naming("octo/demo", 2) == []
