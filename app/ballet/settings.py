"""Ballet's deployment settings, read once at the entry point and passed down.

Values come from the environment and, optionally, an env file (`--env-file`).
Nothing here runs at import time: `load_settings()` is called by a command.
Every secret is a `SecretStr`, so it never shows in a repr, a log line or a
traceback's locals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ballet.core.config import Adapter

# GitHub refuses to send payloads over 25 MB, so anything bigger is not GitHub.
MAX_WEBHOOK_BYTES = 25 * 1024 * 1024
# GitHub lets a person redeliver a delivery for days; a redelivery inside this
# window is recognised and not handled twice.
DEFAULT_DEDUPE_SECONDS = 8 * 24 * 3600


class SettingsError(Exception):
    """The settings are missing or invalid; the message says what to set."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BALLET_",
        env_ignore_empty=True,
        extra="ignore",
        populate_by_name=True,
        frozen=True,
    )

    # BALLET_WEBHOOK_SECRET may hold several comma-separated secrets, and
    # BALLET_WEBHOOK_SECRETS adds more: during a rotation both old and new verify.
    webhook_secret: Annotated[tuple[SecretStr, ...], NoDecode] = ()
    webhook_secrets: Annotated[tuple[SecretStr, ...], NoDecode] = ()
    app_id: int | None = None
    private_key: SecretStr | None = None
    private_key_path: Path | None = None
    github_api_url: str = "https://api.github.com"
    # The URL may carry a password, so it is a secret too.
    redis_url: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("REDIS_URL", "BALLET_REDIS_URL")
    )
    data_dir: Path = Path(".ballet-data")
    workspace_dir: Path | None = None
    session_slots: int = Field(default=2, ge=1, le=256)
    # A stage whose session's worker died (OOM kill, eviction) runs again on its
    # own this many times (BALLET_SESSION_CRASH_RETRIES) before a person is asked.
    session_crash_retries: int = Field(default=2, ge=0, le=10)
    event_slots: int = Field(default=10, ge=1, le=1000)
    delivery_dedupe_seconds: int = Field(default=DEFAULT_DEDUPE_SECONDS, ge=60)
    # A failed delivery is retried after this many seconds times its try squared.
    delivery_retry_seconds: float = Field(default=5.0, ge=0)
    max_webhook_bytes: int = Field(default=MAX_WEBHOOK_BYTES, ge=1024)
    # The runtime of repositories without a `.ballet.yml`, and the variables of
    # the worker's environment its sessions may see (their API keys).
    default_adapter: Adapter = "claude-code"
    default_model: str | None = None
    default_runtime_env: Annotated[tuple[str, ...], NoDecode] = (
        "ANTHROPIC_API_KEY",
        "CLAUDE_CODE_OAUTH_TOKEN",
    )
    # Pause between content-creating GitHub requests of one installation:
    # GitHub asks for serial writes and at most 80 a minute (0.75 s apart).
    # Only a GitHub double such as the sandbox should run with less.
    write_spacing_seconds: float = Field(default=0.75, ge=0)
    log_level: str = "info"
    log_json: bool = False

    @field_validator("default_runtime_env", mode="before")
    @classmethod
    def _split_names(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("webhook_secret", "webhook_secrets", mode="before")
    @classmethod
    def _split_secrets(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @property
    def all_webhook_secrets(self) -> tuple[str, ...]:
        """Every accepted webhook secret, in order, without duplicates."""
        values = [s.get_secret_value() for s in (*self.webhook_secret, *self.webhook_secrets)]
        return tuple(dict.fromkeys(v for v in values if v))

    @property
    def workspaces(self) -> Path:
        """Where session workspaces live: BALLET_WORKSPACE_DIR or data_dir/workspaces."""
        return self.workspace_dir or self.data_dir / "workspaces"

    def private_key_pem(self) -> str | None:
        """The App's private key: BALLET_PRIVATE_KEY, else the file BALLET_PRIVATE_KEY_PATH."""
        if self.private_key is not None:
            return self.private_key.get_secret_value()
        if self.private_key_path is not None:
            try:
                return self.private_key_path.read_text()
            except OSError as exc:
                raise SettingsError(
                    f"cannot read BALLET_PRIVATE_KEY_PATH {self.private_key_path}: {exc.strerror};"
                    " point it at the App's .pem file or set BALLET_PRIVATE_KEY instead"
                ) from exc
        return None

    def require_webhook_secrets(self) -> tuple[str, ...]:
        secrets = self.all_webhook_secrets
        if not secrets:
            raise SettingsError(
                "BALLET_WEBHOOK_SECRET is not set: set it to your GitHub App's webhook secret"
                " (several, comma-separated, while rotating)"
            )
        return secrets

    def require_redis_url(self) -> str:
        if self.redis_url is None:
            raise SettingsError(
                "REDIS_URL is not set: point it at a Redis or Valkey server"
                " (e.g. redis://localhost:6379/0), or use `ballet serve`, which starts its own"
            )
        return self.redis_url.get_secret_value()


def load_settings(env_file: str | Path | None = None) -> Settings:
    """Read the settings from the environment (and `env_file`), explaining any error."""
    if env_file is not None and not Path(env_file).is_file():
        raise SettingsError(f"env file {env_file} does not exist: check the --env-file path")
    try:
        return Settings(_env_file=env_file)
    except ValidationError as exc:
        problems = "; ".join(
            f"BALLET_{'_'.join(str(p) for p in err['loc']).upper()}: {err['msg']}"
            for err in exc.errors()
        )
        raise SettingsError(
            f"invalid settings: {problems}; correct them in the environment"
            " or the --env-file (README.md, Configuration, lists each variable)"
        ) from exc
