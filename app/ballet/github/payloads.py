"""Lenient models of the few webhook fields Ballet reads from every delivery.

githubkit's strict webhook models refuse many real payloads (fields GitHub
added, dropped or nulled over time). These models name only what Ballet
reads, ignore everything else, and turn a field of an unexpected shape into
None rather than refusing the delivery: no real delivery may be lost over a
field Ballet does not use.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, ValidatorFunctionWrapHandler
from pydantic.functional_validators import WrapValidator

T = TypeVar("T")


def _none_on_error(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return None


Lenient = Annotated[T | None, WrapValidator(_none_on_error)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Account(_Model):
    login: Lenient[str] = None
    type: Lenient[str] = None
    id: Lenient[int] = None


class Repository(_Model):
    full_name: Lenient[str] = None
    default_branch: Lenient[str] = None
    owner: Lenient[Account] = None

    @property
    def owner_login(self) -> str | None:
        return self.owner.login if self.owner else None


class Installation(_Model):
    id: Lenient[int] = None


class Envelope(_Model):
    """What every delivery says about itself, whatever its event."""

    event: str
    action: Lenient[str] = None
    installation: Lenient[Installation] = None
    repository: Lenient[Repository] = None
    sender: Lenient[Account] = None

    @property
    def installation_id(self) -> int | None:
        return self.installation.id if self.installation else None


def parse_delivery(event: str, payload: dict[str, Any]) -> Envelope:
    """The envelope of a delivery; never raises for a payload's shape."""
    return Envelope.model_validate({**payload, "event": event})
