"""Small JSON answers: every refusal names what went wrong and what to do next."""

from __future__ import annotations

from starlette.responses import JSONResponse


def problem(status: int, error: str, message: str) -> JSONResponse:
    return JSONResponse({"error": error, "message": message}, status_code=status)


def status(code: int, state: str, **extra: str) -> JSONResponse:
    return JSONResponse({"status": state, **extra}, status_code=code)
