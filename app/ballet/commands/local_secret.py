"""A webhook secret of its own for `ballet serve` on its embedded defaults.

With no BALLET_WEBHOOK_SECRET set, `ballet serve` still starts: it makes a
random secret once, keeps it under BALLET_DATA_DIR (readable by its owner
only) and uses it on every later start, so the secret to paste into the
GitHub App's webhook settings never changes under a running App.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import SecretStr

from ballet.settings import Settings, SettingsError

SECRET_FILE = "webhook-secret"


def with_local_webhook_secret(settings: Settings) -> tuple[Settings, Path | None]:
    """`settings` unchanged when a secret is configured; else with the local one and its path."""
    if settings.all_webhook_secrets:
        return settings, None
    path = settings.data_dir / SECRET_FILE
    try:
        if path.is_file():
            value = path.read_text().strip()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            value = secrets.token_hex(32)
            # Created owner-only from the start: the secret never sits world-readable.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(value + "\n")
    except OSError as exc:
        raise SettingsError(
            f"no BALLET_WEBHOOK_SECRET is set and {path} cannot hold a generated one"
            f" ({exc.strerror}): set BALLET_WEBHOOK_SECRET or a writable BALLET_DATA_DIR"
        ) from exc
    if not value:
        raise SettingsError(f"{path} is empty: delete it to generate a new webhook secret")
    return settings.model_copy(update={"webhook_secret": (SecretStr(value),)}), path
