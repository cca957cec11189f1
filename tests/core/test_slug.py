"""Branch names stay valid git refs whatever the title."""

from __future__ import annotations

import re

from ballet.core.slug import SLUG_MAX, branch_name, slugify
from hypothesis import given, settings
from hypothesis import strategies as st


def test_slug_of_a_plain_title() -> None:
    assert slugify("Add a --verbose flag!") == "add-a-verbose-flag"


def test_accents_fold_and_other_scripts_fall_back() -> None:
    assert slugify("Café déjà vu") == "cafe-deja-vu"
    assert slugify("修复错误") == "ticket"
    assert slugify("../../.lock") == "lock"


def test_slug_is_length_limited_without_a_trailing_dash() -> None:
    slug = slugify("word " * 40)
    assert len(slug) <= SLUG_MAX and not slug.endswith("-")


def test_branch_template_fills_every_placeholder() -> None:
    assert branch_name("ballet/{type}/{ticket}-{slug}", 12, "Fix: crash", "Bug Fix") == (
        "ballet/bug-fix/12-fix-crash"
    )


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_title_gives_a_safe_ref(title: str) -> None:
    ref = branch_name("ballet/{ticket}-{slug}", 3, title, "default")
    assert re.fullmatch(r"ballet/3-[a-z0-9]+(-[a-z0-9]+)*", ref)
    assert ".." not in ref and not ref.endswith((".lock", "/", "."))
