"""The web app: GitHub webhook ingress, health probes and metrics."""

from ballet.web.app import create_app

__all__ = ["create_app"]
