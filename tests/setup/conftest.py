"""Fixtures of the setup area: the sandbox as GitHub and `ballet serve` with no App."""

from setup_kit import sandbox, serve

__all__ = ["sandbox", "serve"]
