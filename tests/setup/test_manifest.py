"""The App manifest holds least privilege and the events Ballet acts on; GitHub's URLs."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from ballet.github.translate import ALWAYS_DELIVERED, HANDLED_EVENTS
from ballet.settings import load_settings
from ballet.setup.envfile import update_env_file
from ballet.setup.manifest import (
    SetupInputError,
    build_manifest,
    manifest_template,
    new_app_url,
    public_url_of,
    web_url_of,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGED = REPO_ROOT / "app" / "ballet" / "setup" / "github-app.yml"
# What Ballet's GitHub calls need (docs/deploy.md explains each); nothing else.
LEAST_PRIVILEGE = {
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "checks": "write",
    "statuses": "read",
    "actions": "read",
    "merge_queues": "read",
    "metadata": "read",
}


def test_manifests_copy_is_the_packaged_manifest() -> None:
    assert (REPO_ROOT / "manifests" / "github-app.yml").read_text() == PACKAGED.read_text(), (
        "copy app/ballet/setup/github-app.yml to manifests/github-app.yml"
    )


def test_the_manifest_subscribes_exactly_the_events_ballet_translates() -> None:
    events = manifest_template()["default_events"]
    assert sorted(events) == events, "keep the list sorted"
    assert set(events) == HANDLED_EVENTS - ALWAYS_DELIVERED


def test_the_manifest_asks_least_privilege() -> None:
    manifest = manifest_template()
    assert manifest["default_permissions"] == LEAST_PRIVILEGE
    assert manifest["public"] is False
    assert "members" not in manifest["default_permissions"]


def test_build_manifest_points_every_url_at_the_public_address() -> None:
    manifest = build_manifest("https://ballet.example.com/gh", "Acme Ballet")
    assert manifest["name"] == "Acme Ballet"
    assert manifest["url"] == "https://ballet.example.com/gh"
    assert manifest["hook_attributes"] == {
        "url": "https://ballet.example.com/gh/webhooks",
        "active": True,
    }
    assert manifest["redirect_url"] == "https://ballet.example.com/gh/setup/callback"
    assert manifest["callback_urls"] == ["https://ballet.example.com/gh/oauth/callback"]
    assert manifest["request_oauth_on_install"] is False
    assert "{public_url}" not in str(manifest)
    with pytest.raises(SetupInputError):
        build_manifest("https://ballet.example.com", "x" * 35)


@pytest.mark.parametrize(
    ("api", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://api.github.com/", "https://github.com"),
        ("https://ghe.acme.internal/api/v3", "https://ghe.acme.internal"),
        ("https://ghe.acme.internal:8443/api/v3/", "https://ghe.acme.internal:8443"),
        ("https://api.acme.ghe.com", "https://acme.ghe.com"),
        ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
    ],
)
def test_githubs_web_address_is_derived_from_its_api_address(api: str, web: str) -> None:
    assert web_url_of(api) == web


def test_new_app_url_for_a_person_or_an_organisation() -> None:
    web = "https://ghe.acme.internal"
    assert new_app_url(web, None, "s1") == f"{web}/settings/apps/new?state=s1"
    assert new_app_url(web, "acme", "s 2") == (
        f"{web}/organizations/acme/settings/apps/new?state=s+2"
    )
    with pytest.raises(SetupInputError):
        new_app_url(web, "../evil", "s")


@pytest.mark.parametrize("bad", ["ftp://x", "not a url", "https://x/?a=1", "https://x/#f", ""])
def test_a_public_address_must_be_plain_http(bad: str) -> None:
    with pytest.raises(SetupInputError):
        public_url_of(bad)


def test_env_file_keeps_other_settings_and_reads_back_a_pem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment would win over the file: only the file's values may count here.
    for name in ("REDIS_URL", "BALLET_APP_ID", "BALLET_PRIVATE_KEY", "BALLET_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    env = tmp_path / "ballet.env"
    env.write_text("REDIS_URL=redis://r:6379/0\nBALLET_APP_ID=1\nBALLET_PRIVATE_KEY_PATH=/x\n")
    env.chmod(0o644)
    pem = '-----BEGIN KEY-----\nab"c\\d\n-----END KEY-----\n'
    update_env_file(
        env,
        {"BALLET_APP_ID": "42", "BALLET_PRIVATE_KEY": pem, "BALLET_WEBHOOK_SECRET": "s3"},
        drop=("BALLET_PRIVATE_KEY_PATH",),
        header="registered",
    )
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    text = env.read_text()
    assert text.count("BALLET_APP_ID") == 1 and "PRIVATE_KEY_PATH" not in text
    settings = load_settings(env)
    assert settings.app_id == 42
    assert settings.private_key_pem() == pem
    assert settings.all_webhook_secrets == ("s3",)
    assert settings.redis_url is not None
    assert settings.redis_url.get_secret_value() == "redis://r:6379/0"
