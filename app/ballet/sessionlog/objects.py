"""The object store finished session logs go to, from BALLET_LOG_STORE and its options.

Unset, the logs stay on this machine under BALLET_DATA_DIR/logs: enough for
`ballet serve`, where the web and the worker are one process. A deployment
with several processes names a store they all reach: `s3://bucket/prefix`
(also any S3-compatible server, through an `endpoint` option), `gs://bucket/prefix`,
`az://container/prefix` or `abfs://container@account.dfs.core.windows.net/prefix`.
obstore reads the provider's usual variables itself (AWS_*, GOOGLE_*, AZURE_*);
BALLET_LOG_STORE_OPTIONS adds or overrides any of them as `key=value,key=value`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from obstore.exceptions import BaseError
from obstore.store import LocalStore, ObjectStore, from_url

from ballet.settings import Settings

# Keys of obstore's HTTP client (its ClientConfig) rather than of the store's own
# config: obstore takes them apart, and refuses either kind in the other's place.
CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "http1_only",
        "http2_keep_alive_interval",
        "http2_keep_alive_timeout",
        "http2_keep_alive_while_idle",
        "http2_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "randomize_addresses",
        "read_timeout",
        "timeout",
        "user_agent",
    }
)
# The schemes a log store may have: the shared stores, and file:// / memory:// for tests.
SCHEMES = ("s3", "s3a", "gs", "az", "azure", "abfs", "abfss", "adl", "file", "memory")
_PROVIDER_PREFIXES = ("aws_", "google_", "azure_")


class LogStoreConfigError(ValueError):
    """BALLET_LOG_STORE or its options cannot make a store; the message says which to fix."""


def parse_options(text: str | None) -> dict[str, str]:
    """`key=value,key=value` (BALLET_LOG_STORE_OPTIONS) as a mapping; keys lower-cased."""
    options: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, equals, value = part.partition("=")
        if not equals or not key.strip():
            # Name the key alone: the value may be a credential.
            raise LogStoreConfigError(
                f"BALLET_LOG_STORE_OPTIONS: {key.strip()[:40]!r} is not key=value;"
                " write e.g. endpoint=https://s3.example.com,region=eu-west-1"
            )
        options[key.strip().lower()] = value.strip()
    return options


def open_object_store(
    url: str | None, data_dir: Path, options: Mapping[str, str] | None = None
) -> ObjectStore:
    """The store BALLET_LOG_STORE names, or the local directory data_dir/logs."""
    if url is None:
        root = data_dir / "logs"
        try:
            root.mkdir(parents=True, exist_ok=True)
            return LocalStore(root.resolve(), automatic_cleanup=True)
        except (OSError, BaseError) as exc:
            raise LogStoreConfigError(
                f"cannot keep session logs in {root}: {exc}; make BALLET_DATA_DIR writable"
                " or set BALLET_LOG_STORE to an object store"
            ) from exc
    scheme = url.partition("://")[0].lower()
    if scheme not in SCHEMES:
        raise LogStoreConfigError(
            f"BALLET_LOG_STORE {url!r} is not an object store URL: use s3://bucket/prefix,"
            " gs://bucket/prefix, az://container/prefix or abfs://container@account…/prefix"
        )
    if scheme == "file":
        # The local store refuses a missing root; create it, as for the default.
        Path(url.removeprefix("file://")).mkdir(parents=True, exist_ok=True)
    config, client = _split(options or {})
    try:
        if scheme in ("file", "memory"):
            return from_url(url)
        # The options are checked by obstore, per provider, as they are passed.
        store: ObjectStore = from_url(
            url, config=cast(Any, config), client_options=cast(Any, client)
        )
        return store
    except (BaseError, ValueError) as exc:
        raise LogStoreConfigError(
            f"BALLET_LOG_STORE {url!r} with BALLET_LOG_STORE_OPTIONS: {exc}".splitlines()[0]
            + "; see docs/operations.md, Session logs"
        ) from exc


def _split(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The store's config and the HTTP client's options, from one list of options."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in options.items():
        bare = key
        for prefix in _PROVIDER_PREFIXES:
            bare = bare.removeprefix(prefix)
        if bare in CLIENT_KEYS:
            client[bare] = value
        else:
            config[key] = value
    endpoint = next((v for k, v in config.items() if k.endswith(("endpoint", "endpoint_url"))), "")
    if endpoint.startswith("http://"):
        # Naming a plain-HTTP endpoint (a MinIO or a test server on this network) is
        # the choice; the client refuses HTTP unless told, so it is told here.
        client.setdefault("allow_http", "true")
    return config, client


def check_log_store(settings: Settings) -> None:
    """Raise LogStoreConfigError, saying what to set, when BALLET_LOG_STORE (and its
    options) cannot make a store: a worker refuses to start rather than fail every
    session's log later."""
    options = settings.log_store_options
    open_object_store(
        settings.log_store,
        settings.data_dir,
        parse_options(options.get_secret_value() if options is not None else None),
    )
