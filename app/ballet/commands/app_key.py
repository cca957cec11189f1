"""The App's private key, checked when a command starts rather than at GitHub's first
call, where a key that is not one surfaced as chained tracebacks that looked like
GitHub being down."""

from __future__ import annotations

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from ballet.settings import Settings, SettingsError

SHAPE = (
    "the GitHub App's private key as GitHub gives it (the .pem from the App's settings),"
    " whole: from -----BEGIN RSA PRIVATE KEY----- to -----END RSA PRIVATE KEY-----"
    " (or PKCS#8's -----BEGIN PRIVATE KEY-----), with its line breaks, or on one line with"
    " each written \\n"
)


def check_private_key(settings: Settings) -> None:
    """Raise SettingsError naming the setting and the shape expected, unless the
    configured key (if any) is an RSA private key GitHub can verify."""
    pem = settings.private_key_pem()
    if pem is None:
        return
    if settings.private_key is not None:
        setting = "BALLET_PRIVATE_KEY"
    else:
        setting = f"the file BALLET_PRIVATE_KEY_PATH names ({settings.private_key_path})"
    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except TypeError:
        raise SettingsError(
            f"{setting} is encrypted with a passphrase, which Ballet cannot give: use {SHAPE}"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise SettingsError(f"{setting} is not a private key: expected {SHAPE}") from None
    if not isinstance(key, RSAPrivateKey):
        raise SettingsError(
            f"{setting} is a {type(key).__name__}, and GitHub Apps sign with RSA: expected {SHAPE}"
        )
