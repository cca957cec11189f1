"""githubkit, configured once for Ballet: one place requests are made and failures named.

What githubkit gives us, set up here:
- App authentication: the App's JWT buys installation tokens; githubkit caches
  each token in its cache strategy until a minute before it expires, and the
  strategy here is Redis, so every worker process shares one token per
  installation instead of minting its own. Every credential in Redis is
  sealed (sealed_cache.py): Redis alone gives no usable token.
- Conditional GETs: githubkit's HTTP cache (hishel) stores bodies with their
  ETag in Redis and revalidates with If-None-Match; a 304 costs no rate limit.
- The throttler hook: `WritePacer` makes writes serial and spaced per
  installation (see pacing.py).
- Bounded retries with jitter on 5xx. Rate limits are *not* retried here:
  they raise `RateLimited` so the job is deferred instead of sleeping.
- One connection pool per process, whatever githubkit does with its clients.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub
from githubkit.exception import (
    GitHubException,
    GraphQLFailed,
    RateLimitExceeded,
    RequestError,
    RequestFailed,
)
from githubkit.typing import RetryOption
from githubkit.utils import UNSET
from redis.asyncio import Redis

from ballet import metrics
from ballet.github.forge import ForgeError, ForgeUnavailable, NotFound, RateLimited
from ballet.github.pacing import DEFAULT_PER_HOUR, DEFAULT_SPACING_SECONDS, WritePacer
from ballet.github.sealed_cache import SealedCacheStrategy
from ballet.github.token_scope import TokenScope
from ballet.metrics import RateLimitKind

# GitHub asks for at least a minute's wait on a secondary limit without a retry-after.
SECONDARY_LIMIT_DEFAULT_WAIT = 60.0
# githubkit waits forever by default; a request GitHub never answers must not hold a
# job (or a session's slot) until arq's job timeout. GitHub itself gives up at 10 s.
REQUEST_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
PER_PAGE = 100
# More than this many pages of comments is not a ticket Ballet can serve anyway.
MAX_PAGES = 30


@dataclass(frozen=True)
class GitHubAppCredentials:
    app_id: int
    private_key: str
    api_url: str = "https://api.github.com"


class ServerErrorRetry:
    """Retry 5xx a few times with exponential backoff and full jitter, and reads that
    timed out or lost their connection (a write that did may have happened: the
    effect's own retry, which finds its comment by marker, decides instead)."""

    def __init__(self, max_retries: int = 3, base_seconds: float = 0.5) -> None:
        self.max_retries = max_retries
        self.base_seconds = base_seconds

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        server_error = (
            isinstance(exc, RequestFailed)
            and not isinstance(exc, RateLimitExceeded)
            and exc.response.status_code >= 500
            and not _creates_twice(exc.response.raw_request)
        )
        read_broke = _read_without_answer(exc)
        if retry_count < self.max_retries and (server_error or read_broke):
            delay = random.uniform(0, self.base_seconds * 2**retry_count)
            return RetryOption(True, timedelta(seconds=delay))
        return RetryOption(False)


def _read_without_answer(exc: GitHubException) -> bool:
    """A GET or HEAD that timed out or lost its connection: safe to send again."""
    if not isinstance(exc, RequestError) or isinstance(exc, RequestFailed):
        return False
    try:
        method = exc.exc.request.method
    except (AttributeError, RuntimeError):  # an error raised before any request was made
        return False
    return method in ("GET", "HEAD")


def _creates_twice(request: httpx.Request) -> bool:
    """A POST that GitHub may have carried out before it failed, and that would make a
    second comment or check run if sent again. Left to the effect's own retry, which
    finds the comment by its marker (and the check run in the memo) first."""
    path = request.url.path
    return request.method == "POST" and path.endswith(("/comments", "/check-runs", "/replies"))


class _KeptOpenTransport(httpx.AsyncBaseTransport):
    """One connection pool for every request: githubkit makes a client per
    request and closes it after, which would close a shared transport too.

    Every request that leaves for GitHub passes here (retries and token
    requests too; hishel's cache answers its hits above this), so this is
    where the GitHub metrics are counted."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except Exception:
            metrics.github_response(request.method, None, None)
            raise
        if response.status_code in (403, 429):
            response = await _read_through(response)  # a small error body, to classify
        metrics.github_response(request.method, response.status_code, rate_limit_kind(response))
        return response

    async def aclose(self) -> None:
        pass


class GitHubClients:
    """Makes githubkit clients that share one Redis (tokens, cache, pacing) and one pool.

    `redis` must return bytes (the default, `decode_responses=False`): the HTTP
    cache stores raw bodies.
    """

    def __init__(
        self,
        credentials: GitHubAppCredentials,
        redis: Redis,
        *,
        write_spacing_seconds: float = DEFAULT_SPACING_SECONDS,
        writes_per_hour: int = DEFAULT_PER_HOUR,
        retry: ServerErrorRetry | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.credentials = credentials
        self._redis = redis
        self._spacing = write_spacing_seconds
        self._per_hour = writes_per_hour
        self._retry = retry or ServerErrorRetry()
        # Loading CA certificates takes tens of milliseconds: once per process.
        # httpx's own context honours SSL_CERT_FILE / SSL_CERT_DIR (a GHES CA).
        self._pool = transport or httpx.AsyncHTTPTransport(verify=httpx.create_ssl_context())
        self._transport = _KeptOpenTransport(self._pool)
        self._cache = SealedCacheStrategy(redis, "ballet:gh", private_key=credentials.private_key)

    async def aclose(self) -> None:
        """Close the shared connection pool (at worker shutdown)."""
        await self._pool.aclose()

    def app(self) -> GitHubClient:
        """A client authenticated as the App itself (its JWT), for /app endpoints."""
        auth = AppAuthStrategy(self.credentials.app_id, self.credentials.private_key)
        return GitHubClient(self._github(auth, throttler=None))

    def installation(self, installation_id: int, scope: TokenScope | None = None) -> GitHubClient:
        """A client of the installation; with a `scope`, its token reaches only those
        repositories with those permissions (token_scope.py). Writes are paced per
        installation whatever the scope: GitHub counts them so."""
        auth = AppInstallationAuthStrategy(
            self.credentials.app_id,
            self.credentials.private_key,
            installation_id,
            repositories=UNSET if scope is None or not scope.repos else scope.names(),
            permissions=UNSET if scope is None else scope.github_permissions(),
        )
        pacer = WritePacer(
            self._redis, installation_id, spacing_seconds=self._spacing, per_hour=self._per_hour
        )
        return GitHubClient(self._github(auth, throttler=pacer))

    def _github(self, auth: Any, throttler: WritePacer | None) -> GitHub[Any]:
        gh: GitHub[Any] = GitHub(
            auth,
            base_url=self.credentials.api_url,
            cache_strategy=self._cache,
            throttler=throttler,
            auto_retry=self._retry,
            async_transport=self._transport,
            user_agent="ballet",
            timeout=REQUEST_TIMEOUT,
        )
        return gh


class GitHubClient:
    """Requests in, JSON out; githubkit's exceptions become the forge's."""

    def __init__(self, gh: GitHub[Any]) -> None:
        self._gh = gh

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
    ) -> httpx.Response:
        with forge_errors(method, path):
            response = await self._gh.arequest(method, path, json=json, params=params)
        return response.raw_response

    async def installation_token(self) -> str:
        """The installation token, without spending a request on the API: githubkit's
        auth flow is run on a request that is never sent, so only a token it does
        not hold yet (none cached in Redis, or about to expire) costs one POST."""
        with forge_errors("POST", "access_tokens"):
            async with self._gh.get_async_client() as client:
                probe = client.build_request("GET", "/")
                flow = self._gh.auth.get_auth_flow(self._gh).async_auth_flow(probe)
                outgoing = await flow.__anext__()
                while outgoing is not probe:
                    outgoing = await flow.asend(await client.send(outgoing, auth=None))
                await flow.aclose()
        scheme, _, token = str(probe.headers.get("authorization", "")).partition(" ")
        if scheme.lower() != "token" or not token:
            raise ForgeError("githubkit's auth flow gave no installation token")
        return token

    async def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return (await self.call(method, path, **kwargs)).json()

    async def pages(self, path: str, params: dict[str, Any] | None = None) -> list[Any]:
        items: list[Any] = []
        for page in range(1, MAX_PAGES + 1):
            batch = await self.json(
                "GET", path, params={**(params or {}), "per_page": PER_PAGE, "page": page}
            )
            items.extend(batch)
            if len(batch) < PER_PAGE:
                break
        return items

    async def graphql(self, query: str, variables: dict[str, Any]) -> None:
        with forge_errors("POST", "graphql"):
            try:
                await self._gh.async_graphql(query, variables)
            except GraphQLFailed as exc:
                said = "; ".join(e.message for e in exc.response.errors or ()) or repr(exc)
                raise ForgeError(f"GraphQL: {said}") from exc


@contextlib.contextmanager
def forge_errors(method: str, path: str) -> Iterator[None]:
    """githubkit's failures as the Forge's: waiting, refused, or unreachable."""
    try:
        yield
    except RateLimitExceeded as exc:
        raise RateLimited(
            max(exc.retry_after.total_seconds(), 1.0), reason=f"{method} {path}: rate limited"
        ) from exc
    except RequestFailed as exc:
        raise failure(method, path, exc.response.raw_response) from exc
    except RequestError as exc:
        if isinstance(exc.exc, RequestFailed):
            # The token's own request, made inside githubkit's auth flow, was refused
            # (a scope the installation cannot give is a 422): said as any refusal is.
            token = exc.exc.response.raw_response
            raise failure("POST", f"an installation token for {method} {path}", token) from exc
        raise ForgeUnavailable(f"{method} {path}: {exc!r}") from exc


async def _read_through(response: httpx.Response) -> httpx.Response:
    """The same response with its body read: raw (still encoded), so every layer above
    reads it exactly as it would have from the network."""
    if response.is_stream_consumed:
        return response  # read already (an in-process transport's ready-made response)
    raw = b"".join([chunk async for chunk in response.aiter_raw()])
    await response.aclose()
    return httpx.Response(
        response.status_code, headers=response.headers, content=raw, extensions=response.extensions
    )


def rate_limit_kind(response: httpx.Response) -> RateLimitKind | None:
    """Which rate limit a read response reports, if any: githubkit's rules for its
    Primary/SecondaryRateLimitExceeded, plus what `failure` also counts (a 429, or a
    403 whose message names a rate limit or abuse)."""
    if response.status_code not in (403, 429):
        return None
    if "retry-after" in response.headers:
        return "secondary"
    message = _message(response).lower()
    if response.headers.get("x-ratelimit-remaining") == "0":
        return "secondary" if "secondary rate" in message else "primary"
    if response.status_code == 429 or "rate limit" in message or "abuse" in message:
        return "secondary"
    return None


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    return str(body.get("message", "")) if isinstance(body, dict) else ""


def failure(method: str, path: str, response: httpx.Response) -> Exception:
    status = response.status_code
    try:
        message = str(response.json().get("message", ""))
    except ValueError:
        message = response.text[:200]
    text = f"{method} {path}: {status} {message}".strip()
    lowered = message.lower()
    if status == 429 or (status == 403 and ("rate limit" in lowered or "abuse" in lowered)):
        # githubkit raises its own rate-limit errors only when GitHub sends
        # retry-after or x-ratelimit-remaining: 0; the message alone also counts.
        return RateLimited(SECONDARY_LIMIT_DEFAULT_WAIT, reason=text)
    if status == 404:
        return NotFound(text, status=status)
    if status >= 500:
        return ForgeUnavailable(text, status=status)
    return ForgeError(text, status=status)
