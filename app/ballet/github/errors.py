"""How a forge call fails, apart from the Protocol (`forge.py` names them for its callers)."""

from __future__ import annotations


class ForgeError(Exception):
    """A forge call failed in a way retrying the same call will not fix."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ForgeUnavailable(ForgeError):
    """GitHub could not be reached or kept failing (5xx); the job may be retried later."""


class HeadMoved(ForgeError):
    """The pull request's head is no longer the one a call expected."""


class NotFound(ForgeError):
    """The repository, issue, pull request or file does not exist (or is hidden)."""


class RateLimited(Exception):
    """GitHub asked us to slow down; the job should be deferred, not slept in.

    The job layer turns this into `arq.Retry(defer=retry_after_seconds)`.
    """

    def __init__(self, retry_after_seconds: float, *, reason: str = "rate limited") -> None:
        super().__init__(f"{reason}; retry after {retry_after_seconds:.0f}s")
        self.retry_after_seconds = retry_after_seconds
        self.reason = reason
