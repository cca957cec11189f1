"""First-run setup: register Ballet's GitHub App through GitHub's App manifest flow."""

from ballet.setup.flow import RegisteredApp, SetupFlow

__all__ = ["RegisteredApp", "SetupFlow"]
