"""Ballet: a GitHub App that runs AI coding agents through a per-ticket pipeline."""

__version__ = "0.1.0"
