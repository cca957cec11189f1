"""Reading a request body without ever holding more than a limit of it."""

from __future__ import annotations

from starlette.requests import Request


class BodyTooLarge(Exception):
    pass


class BadContentLength(Exception):
    pass


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, or BodyTooLarge as soon as it is known to exceed `limit`.

    A declared Content-Length over the limit is refused before reading a byte;
    a chunked or lying body is counted as it streams and refused mid-way.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BadContentLength(declared)
        if int(declared) > limit:
            raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)
