"""GitHub's error responses: `{"message", "documentation_url"}`, plus `errors` on 422."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

DOCS = "https://docs.github.com/rest"


class ApiError(Exception):
    def __init__(self, status: int, message: str, errors: list[Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors


def not_found() -> ApiError:
    return ApiError(404, "Not Found")


def unprocessable(message: str, *, field: str | None = None, code: str = "invalid") -> ApiError:
    errors = [{"resource": "Sandbox", "field": field, "code": code}] if field else None
    return ApiError(422, message, errors)


def forbidden(message: str) -> ApiError:
    return ApiError(403, message)


def error_response(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    body: dict[str, Any] = {"message": exc.message, "documentation_url": DOCS}
    if exc.errors is not None:
        body["errors"] = exc.errors
    body["status"] = str(exc.status)
    headers = {"WWW-Authenticate": 'Basic realm="GitHub"'} if exc.status == 401 else None
    return JSONResponse(body, status_code=exc.status, headers=headers)
