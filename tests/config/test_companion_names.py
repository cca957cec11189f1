"""`companions:` names other repositories as GitHub spells them, each once."""

from __future__ import annotations

from ballet.core.resolve import resolve_pipeline
from config_helpers import only_error, valid


def test_companions_are_pinned_in_their_landing_order() -> None:
    config = valid(
        "runtimes: {claude: {adapter: claude-code}}\ndefault_runtime: claude\n"
        "companions: [acme/lib, acme/web.site]\n"
    )
    assert config.companions == ("acme/lib", "acme/web.site")
    assert resolve_pipeline(config, []).companions == ("acme/lib", "acme/web.site")


def test_a_companion_that_is_not_owner_slash_name_is_refused_at_its_item() -> None:
    error = only_error("companions:\n  - acme/lib\n  - just-a-name\n")
    assert (error.line, error.column) == (3, 5)
    assert "write a repository as `owner/name`" in error.message


def test_a_companion_named_twice_is_refused() -> None:
    error = only_error("companions: [acme/lib, Acme/Lib]\n")
    assert (error.line, error.column) == (1, 13)
    assert "`Acme/Lib` is named twice" in error.message
