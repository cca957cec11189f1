"""Pieces of the per-area fixtures: each area's own Valkey database, and an App key."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

from arq.connections import ArqRedis
from ballet.queue import connect
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def area_redis_url(redis_url: str, db: int) -> str:
    """The shared server's database `db`: areas empty their own database, never another's."""
    return urlunsplit(urlsplit(redis_url)._replace(path=f"/{db}"))


@contextlib.asynccontextmanager
async def emptied_pool(url: str) -> AsyncIterator[ArqRedis]:
    """An arq pool on `url` whose database starts empty; closed with its connections."""
    pool = await connect(url)
    await pool.flushdb()
    try:
        yield pool
    finally:
        await pool.aclose(close_connection_pool=True)


def rsa_private_key_pem() -> str:
    """A fresh GitHub App private key, PEM (PKCS#8) text as the App settings take it."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
