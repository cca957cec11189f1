"""Settings: secrets stay secret, lists of webhook secrets, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.settings import Settings, SettingsError, load_settings


def test_secrets_never_show_in_repr_or_str(tmp_path: Path) -> None:
    settings = Settings(
        webhook_secret="hook-secret-1,hook-secret-2",
        private_key="-----BEGIN PRIVATE KEY-----abc",
        redis_url="redis://:redis-password@localhost:6379/0",
    )
    for text in (repr(settings), str(settings), str(settings.model_dump())):
        for secret in ("hook-secret-1", "hook-secret-2", "PRIVATE KEY", "redis-password"):
            assert secret not in text
    assert settings.all_webhook_secrets == ("hook-secret-1", "hook-secret-2")


def test_env_and_env_file_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_file = tmp_path / "ballet.env"
    env_file.write_text(
        "BALLET_WEBHOOK_SECRET=old, new\nBALLET_WEBHOOK_SECRETS=newer\n"
        "BALLET_SESSION_SLOTS=4\nREDIS_URL=redis://example:6379/1\n"
    )
    monkeypatch.setenv("BALLET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("REDIS_URL", raising=False)
    settings = load_settings(env_file)
    assert settings.all_webhook_secrets == ("old", "new", "newer")
    assert settings.session_slots == 4
    assert settings.require_redis_url() == "redis://example:6379/1"
    assert settings.workspaces == tmp_path / "data" / "workspaces"
    assert settings.github_api_url == "https://api.github.com"


def test_missing_values_say_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REDIS_URL", "BALLET_WEBHOOK_SECRET", "BALLET_WEBHOOK_SECRETS"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    with pytest.raises(SettingsError, match="BALLET_WEBHOOK_SECRET is not set"):
        settings.require_webhook_secrets()
    with pytest.raises(SettingsError, match="REDIS_URL is not set"):
        settings.require_redis_url()


def test_invalid_values_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BALLET_SESSION_SLOTS", "many")
    with pytest.raises(SettingsError, match="BALLET_SESSION_SLOTS"):
        load_settings()
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings("/nonexistent/ballet.env")


def test_invalid_values_say_where_to_correct_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BALLET_EVENT_SLOTS", "0")
    with pytest.raises(SettingsError) as refused:
        load_settings()
    message = str(refused.value)
    assert message.startswith("invalid settings: BALLET_EVENT_SLOTS: Input should be greater")
    assert message.endswith(
        "correct them in the environment or the --env-file"
        " (README.md, Configuration, lists each variable)"
    )


def test_private_key_comes_from_the_value_or_the_file(tmp_path: Path) -> None:
    pem = tmp_path / "app.pem"
    pem.write_text("PEM-FROM-FILE")
    assert Settings(private_key_path=pem).private_key_pem() == "PEM-FROM-FILE"
    assert Settings(private_key="PEM", private_key_path=pem).private_key_pem() == "PEM"
    with pytest.raises(SettingsError, match="BALLET_PRIVATE_KEY_PATH"):
        Settings(private_key_path=tmp_path / "missing.pem").private_key_pem()


def test_monthly_cost_caps_are_read_and_must_be_above_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert load_settings().budget_repository_monthly_usd is None
    monkeypatch.setenv("BALLET_BUDGET_REPOSITORY_MONTHLY_USD", "250")
    monkeypatch.setenv("BALLET_BUDGET_INSTALLATION_MONTHLY_USD", "1000.5")
    settings = load_settings()
    assert settings.budget_repository_monthly_usd == 250.0
    assert settings.budget_installation_monthly_usd == 1000.5
    monkeypatch.setenv("BALLET_BUDGET_INSTALLATION_MONTHLY_USD", "0")
    with pytest.raises(SettingsError, match="BALLET_BUDGET_INSTALLATION_MONTHLY_USD"):
        load_settings()
