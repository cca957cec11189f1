"""The pages' settings: the public address, GitHub's web address and the cookie key."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from ballet.settings import Settings, SettingsError
from ballet.watch.config import SECRET_FILE, watch_config
from pydantic import ValidationError


def test_the_public_url_defaults_to_the_address_served(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert settings.with_listening_address("127.0.0.1", 8000).public_url == "http://127.0.0.1:8000"
    assert settings.with_listening_address("0.0.0.0", 80).public_url == "http://127.0.0.1:80"
    assert settings.with_listening_address("::", 8000).public_url == "http://[::1]:8000"
    chosen = Settings(data_dir=tmp_path, public_url="https://ballet.example.com/")
    assert chosen.public_url == "https://ballet.example.com"
    assert chosen.with_listening_address("0.0.0.0", 80).public_url == "https://ballet.example.com"
    with pytest.raises(ValidationError):
        Settings(public_url="ballet.example.com")


@pytest.mark.parametrize(
    ("api", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://ghe.acme.internal/api/v3", "https://ghe.acme.internal"),
    ],
)
def test_githubs_web_address_follows_the_api_unless_set(api: str, web: str) -> None:
    assert Settings(github_api_url=api).web_url == web
    assert Settings(github_api_url=api, github_web_url="https://x.example").web_url == (
        "https://x.example"
    )


def test_the_cookie_key_is_made_once_owner_only_and_kept(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = watch_config(settings)
    path = tmp_path / "data" / SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert watch_config(settings).session_key == first.session_key  # a restart keeps it
    assert len(first.session_key) == 64
    given = watch_config(Settings(data_dir=tmp_path, web_session_secret="from-the-env"))
    assert given.session_key == b"from-the-env"
    path.write_text("")
    with pytest.raises(SettingsError, match="delete it"):
        watch_config(settings)


def test_sign_in_needs_both_the_client_id_and_secret(tmp_path: Path) -> None:
    assert not watch_config(Settings(data_dir=tmp_path, github_client_id="Iv1.x")).sign_in
    both = Settings(data_dir=tmp_path, github_client_id="Iv1.x", github_client_secret="s")
    assert watch_config(both).sign_in and both.oauth_configured
    shown = repr(watch_config(both))  # secrets stay out of reprs, and so of logs
    assert "client_secret" not in shown and "session_key" not in shown
