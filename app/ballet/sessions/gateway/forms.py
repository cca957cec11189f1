"""Each provider's ways of carrying a key, and of saying an error.

A CLI presents its session's token where its provider expects a key; the
gateway reads it from any of the provider's forms, and puts the real key in the
form of the variable it came from (ANTHROPIC_AUTH_TOKEN is a bearer token,
ANTHROPIC_API_KEY an `x-api-key`). Errors the gateway answers itself are in the
provider's own JSON shape, so the CLI shows their message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Literal
from urllib.parse import parse_qsl, urlencode

from ballet.core.provider_keys import Provider

HeaderForm = Literal["bearer", "x-api-key", "x-goog-api-key"]

# The header each key variable's value goes upstream in; other names: the provider's.
FORM_OF_NAME: Mapping[str, HeaderForm] = {"ANTHROPIC_AUTH_TOKEN": "bearer"}
FORM_OF_PROVIDER: Mapping[Provider, HeaderForm] = {
    "anthropic": "x-api-key",
    "openai": "bearer",
    "gemini": "x-goog-api-key",
}
AUTH_HEADERS = (b"authorization", b"x-api-key", b"x-goog-api-key")
# Not forwarded either way: they describe one connection, not the exchange.
HOP_BY_HOP = frozenset(
    {
        b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization",
        b"proxy-connection", b"te", b"trailer", b"transfer-encoding", b"upgrade", b"host",
        b"expect",  # answered by the gateway itself
    }
)  # fmt: skip
Headers = list[tuple[bytes, bytes]]


def form_of(name: str, provider: Provider) -> HeaderForm:
    return FORM_OF_NAME.get(name, FORM_OF_PROVIDER[provider])


def presented(headers: Iterable[tuple[bytes, bytes]], query: str) -> list[str]:
    """Every credential the request carries, in any form (the gateway checks each)."""
    found: list[str] = []
    for name, value in headers:
        if name == b"authorization":
            scheme, _, credential = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credential:
                found.append(credential.strip())
        elif name in (b"x-api-key", b"x-goog-api-key"):
            found.append(value.decode("latin-1").strip())
    found += [value for key, value in parse_qsl(query) if key == "key"]
    return found


def upstream_headers(headers: Iterable[tuple[bytes, bytes]], form: HeaderForm, key: str) -> Headers:
    """The request's headers for the upstream: the session's token out, the key in.
    Asked for an unencoded answer, so its bytes are metered as they pass."""
    kept = [
        (name, value)
        for name, value in headers
        if name not in HOP_BY_HOP and name not in AUTH_HEADERS and name != b"accept-encoding"
    ]
    value = f"Bearer {key}" if form == "bearer" else key
    header = b"authorization" if form == "bearer" else form.encode()
    return [*kept, (header, value.encode()), (b"accept-encoding", b"identity")]


def with_length(headers: Headers, length: int) -> Headers:
    """`headers` for a body of `length` bytes sent whole (not chunked)."""
    kept = [(n, v) for n, v in headers if n not in (b"content-length", b"transfer-encoding")]
    return [*kept, (b"content-length", str(length).encode())]


def without_key(query: str) -> str:
    """Gemini's `?key=` is the session's token: it never goes upstream."""
    return urlencode([(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "key"])


def error_body(provider: Provider, status: int, message: str) -> bytes:
    """An error as the provider words one (its CLI prints the message)."""
    if provider == "anthropic":
        kind = {401: "authentication_error", 404: "not_found_error"}.get(
            status, "invalid_request_error" if status < 500 else "api_error"
        )
        body: object = {"type": "error", "error": {"type": kind, "message": message}}
    elif provider == "openai":
        kind = {401: "invalid_api_key"}.get(status, "invalid_request_error")
        body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
    else:
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND"}
        body = {
            "error": {
                "code": status,
                "message": message,
                "status": names.get(status, "UNAVAILABLE"),
            }
        }
    return json.dumps(body).encode()
