"""X-Hub-Signature-256 verification against every configured secret."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence


def signature_valid(keys: Sequence[bytes], body: bytes, signature: bytes | None) -> bool:
    """True when `signature` (the raw header) is `sha256=<hex HMAC of body>` under a key."""
    # Only SHA-256: GitHub's SHA-1 header is not accepted.
    if not signature or not signature.startswith(b"sha256="):
        return False
    # Check every key (no early exit), so timing says nothing about which matched.
    # hmac.digest is the one-shot C path: no HMAC object per delivery.
    results = [
        hmac.compare_digest(
            b"sha256=" + hmac.digest(key, body, hashlib.sha256).hex().encode(), signature
        )
        for key in keys
    ]
    return any(results)
