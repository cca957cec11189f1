"""What the pages need of the settings, read once when the web app is built.

The key that signs session cookies comes from BALLET_WEB_SESSION_SECRET, or
else is made once and kept in BALLET_DATA_DIR/web-session-secret (owner-only,
as `ballet serve` keeps its webhook secret): a restart keeps everyone signed in,
and deleting the file signs everyone out.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ballet.settings import Settings, SettingsError

SECRET_FILE = "web-session-secret"


@dataclass(frozen=True)
class AppCredentials:
    app_id: int
    private_key: str = field(repr=False)


@dataclass(frozen=True)
class WatchConfig:
    # None: the address each request came to (only tests and the demo build the app
    # without one; `ballet serve` and `ballet web` pass the address they listen on).
    public_url: str | None
    github_web_url: str
    github_api_url: str
    client_id: str | None
    client_secret: str | None = field(repr=False)
    session_key: bytes = field(repr=False)
    app: AppCredentials | None = None  # None: no App yet, so no ticket to show
    # A live log's keep-alive after this many quiet seconds (BALLET_LIVE_KEEPALIVE_SECONDS).
    keepalive_seconds: float = 15.0
    # The operator's monthly caps the gateway holds (BALLET_BUDGET_REPOSITORY_MONTHLY_USD,
    # BALLET_BUDGET_INSTALLATION_MONTHLY_USD), shown against this month's spend.
    repository_monthly_usd: float | None = None
    installation_monthly_usd: float | None = None

    @property
    def sign_in(self) -> bool:
        """Whether "Sign in with GitHub" is set up (the App's OAuth client id and secret)."""
        return bool(self.client_id and self.client_secret)


def watch_config(settings: Settings) -> WatchConfig:
    """The pages' configuration; raises SettingsError when the cookie key cannot be kept."""
    key = settings.private_key_pem() if settings.app_id is not None else None
    secret = settings.github_client_secret
    return WatchConfig(
        public_url=settings.public_url,
        github_web_url=settings.web_url,
        github_api_url=settings.github_api_url.rstrip("/"),
        client_id=settings.github_client_id,
        client_secret=secret.get_secret_value() if secret is not None else None,
        session_key=_session_key(settings),
        app=AppCredentials(settings.app_id, key) if settings.app_id and key else None,
        keepalive_seconds=settings.live_keepalive_seconds,
        repository_monthly_usd=settings.budget_repository_monthly_usd,
        installation_monthly_usd=settings.budget_installation_monthly_usd,
    )


def _session_key(settings: Settings) -> bytes:
    if settings.web_session_secret is not None:
        return settings.web_session_secret.get_secret_value().encode()
    path = settings.data_dir / SECRET_FILE
    try:
        return _kept_secret(path).encode()
    except OSError as exc:
        raise SettingsError(
            f"no BALLET_WEB_SESSION_SECRET is set and {path} cannot hold a generated one"
            f" ({exc.strerror}): set BALLET_WEB_SESSION_SECRET or a writable BALLET_DATA_DIR"
        ) from exc


def _kept_secret(path: Path) -> str:
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
        # Owner-only from creation, and linked into place whole: the key never sits
        # world-readable, and a process starting alongside never reads it half-written.
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        try:
            os.link(partial, path)
        except FileExistsError:
            pass  # another process of this deployment made it first: use theirs
        finally:
            partial.unlink()
    value = path.read_text().strip()
    if not value:
        raise SettingsError(f"{path} is empty: delete it to generate a new web session secret")
    return value
