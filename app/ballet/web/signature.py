"""X-Hub-Signature-256 verification against every configured secret."""

from __future__ import annotations

from collections.abc import Sequence

from githubkit.webhooks import verify


def signature_valid(secrets: Sequence[str], body: bytes, signature: str | None) -> bool:
    # Only SHA-256: githubkit's verify would fall back to SHA-1 for any other prefix.
    if not signature or not signature.startswith("sha256="):
        return False
    # Check every secret (no early exit), so timing says nothing about which matched.
    results = [verify(secret, body, signature) for secret in secrets]
    return any(results)
