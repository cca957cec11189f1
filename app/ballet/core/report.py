"""The session contract's JSON documents: a stage report and a phase handoff.

Other programs (agent runtimes, scripted agents) write these;
docs/session-contract.md is the contract and these models must accept exactly it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Lenient(BaseModel):
    # Agents may add fields of their own; only the named ones are read.
    model_config = ConfigDict(extra="ignore", frozen=True)


class Usage(Lenient):
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0)


class Question(Lenient):
    text: str = Field(min_length=1)
    blocking: bool = False


class Report(Lenient):
    outcome: str = Field(min_length=1, max_length=64)
    summary: str
    details: str = ""
    decisions: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    questions: tuple[Question, ...] = ()
    usage: Usage = Usage()
    # Roles whose sign-off this session asks for (docs/architecture.md: roles may add one).
    require_signoffs: tuple[str, ...] = ()


class Handoff(Lenient):
    summary: str
    decisions: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
