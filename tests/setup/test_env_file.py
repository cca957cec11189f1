"""The env file /setup writes is read alike by Ballet (`--env-file`) and by
`kubectl create secret generic --from-env-file` (docs/deploy.md): the real kubectl
where it is on PATH (kubectl_secrets.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from area_fixtures import rsa_private_key_pem
from ballet.settings import Settings, load_settings
from ballet.setup.envfile import EnvFileError, update_env_file
from kubectl_secrets import secret_data

NAMES = (
    "BALLET_APP_ID",
    "BALLET_PRIVATE_KEY",
    "BALLET_PRIVATE_KEY_PATH",
    "BALLET_WEBHOOK_SECRET",
    "BALLET_GITHUB_API_URL",
    "BALLET_PUBLIC_URL",
    "BALLET_GITHUB_CLIENT_ID",
    "BALLET_GITHUB_CLIENT_SECRET",
    "REDIS_URL",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)


def _as_read(settings: Settings) -> dict[str, object]:
    secret = settings.github_client_secret
    return {
        "app_id": settings.app_id,
        "pem": settings.private_key_pem(),
        "webhook": settings.all_webhook_secrets,
        "api": settings.github_api_url,
        "public": settings.public_url,
        "client": (settings.github_client_id, secret.get_secret_value() if secret else None),
    }


def test_kubectl_and_ballet_read_the_setup_env_file_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pem = rsa_private_key_pem()
    env = tmp_path / "github-app.env"
    update_env_file(
        env,
        {
            "BALLET_APP_ID": "123456",
            "BALLET_PRIVATE_KEY": pem,
            "BALLET_GITHUB_API_URL": "https://api.github.com",
            "BALLET_PUBLIC_URL": "https://ballet.example.com",
            "BALLET_WEBHOOK_SECRET": "0f3c9a7e5d1b",
            "BALLET_GITHUB_CLIENT_ID": "Iv23liAbC",
            "BALLET_GITHUB_CLIENT_SECRET": "e5d1b0f3c9a7",
        },
        header="GitHub App ballet-test (https://github.com/apps/ballet-test)",
    )
    data = secret_data("ballet", [f"--from-env-file={env.name}"], tmp_path)
    # What a pod is given: no quotes kept, one line per value.
    assert data["BALLET_APP_ID"] == "123456"
    assert data["BALLET_PUBLIC_URL"] == "https://ballet.example.com"
    from_file = _as_read(load_settings(env))
    for name, value in data.items():
        monkeypatch.setenv(name, value)
    from_secret = _as_read(load_settings())
    assert from_secret == from_file
    assert from_file["pem"] == pem and from_file["app_id"] == 123456


def test_an_older_quoted_env_file_still_reads(tmp_path: Path) -> None:
    pem = rsa_private_key_pem()
    env = tmp_path / "github-app.env"
    quoted = pem.replace("\n", "\\n")
    env.write_text(f'BALLET_APP_ID="42"\nBALLET_PRIVATE_KEY="{quoted}"\n')
    settings = load_settings(env)
    assert settings.app_id == 42
    assert settings.private_key_pem() == pem


@pytest.mark.parametrize("value", ["a #b", " padded", '"quoted"', "x${HOME}"])
def test_a_value_the_two_would_read_differently_is_refused(tmp_path: Path, value: str) -> None:
    env = tmp_path / "github-app.env"
    with pytest.raises(EnvFileError, match="BALLET_PUBLIC_URL's value would read differently"):
        update_env_file(env, {"BALLET_PUBLIC_URL": value})
    assert not env.exists()
