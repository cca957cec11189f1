"""Conditional GETs as GitHub answers them: an ETag on every JSON GET, 304 when it matches.

Ballet's HTTP cache revalidates with `If-None-Match`; a 304 is how GitHub spares
its rate limit, so the sandbox gives the same answers (and counts them).
"""

from __future__ import annotations

import hashlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ConditionalGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        segments = path.split("/")
        is_git = len(segments) > 2 and segments[2].endswith(".git")
        if scope["type"] != "http" or scope["method"] != "GET" or is_git:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body = bytearray()

        async def hold(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    await self._finish(scope, send, start, bytes(body))

        await self.app(scope, receive, hold)

    async def _finish(self, scope: Scope, send: Send, start: Message | None, body: bytes) -> None:
        assert start is not None
        headers = list(start.get("headers", []))
        if start["status"] != 200:
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        etag = f'W/"{hashlib.sha256(body).hexdigest()[:40]}"'.encode()
        asked = dict(scope.get("headers", [])).get(b"if-none-match", b"")
        if etag in [tag.strip() for tag in asked.split(b",")]:
            kept = [
                (k, v) for k, v in headers if k.lower() not in (b"content-length", b"content-type")
            ]
            await send({**start, "status": 304, "headers": [*kept, (b"etag", etag)]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({**start, "headers": [*headers, (b"etag", etag)]})
        await send({"type": "http.response.body", "body": body})
