"""A loopback forwarder to a test's Valkey that the test cuts: Redis going away
under a client, as when a stopping worker closes its connections or Redis fails over."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit


class Cuttable:
    """Forwards connections to `url`'s server until `cut`; then refuses them."""

    def __init__(self, url: str) -> None:
        self._target = urlsplit(url)
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        """The URL a client uses instead of the server's: the same database, through here."""
        self._server = await asyncio.start_server(self._forward, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return self._target._replace(netloc=f"127.0.0.1:{port}").geturl()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._target.hostname is not None
        up_reader, up_writer = await asyncio.open_connection(
            self._target.hostname, self._target.port
        )
        self._writers += [writer, up_writer]
        await asyncio.gather(
            _pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True
        )

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        await self._server.wait_closed()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()
