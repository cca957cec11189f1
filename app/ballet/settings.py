"""Ballet's deployment settings, read once at the entry point and passed down.

Values come from the environment and, optionally, an env file (`--env-file`).
Nothing here runs at import time: `load_settings()` is called by a command.
Every secret is a `SecretStr`, so it never shows in a repr, a log line or a
traceback's locals.
"""

from __future__ import annotations

import re
import secrets
import socket
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ballet.core.config import Adapter
from ballet.core.egress import parse_rule
from ballet.core.pools import DEFAULT_POOL, PoolAccess, check_pool_name, parse_pool_access
from ballet.core.session_limits import (
    MAX_CPUS,
    MIN_CPUS,
    MIN_DISK,
    MIN_MEMORY,
    MIN_PROCESSES,
    LimitValues,
    parse_size,
)

# GitHub refuses to send payloads over 25 MB, so anything bigger is not GitHub.
MAX_WEBHOOK_BYTES = 25 * 1024 * 1024
# GitHub lets a person redeliver a delivery for days; a redelivery inside this
# window is recognised and not handled twice.
DEFAULT_DEDUPE_SECONDS = 8 * 24 * 3600


class SettingsError(Exception):
    """The settings are missing or invalid; the message says what to set."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="BALLET_",
        env_ignore_empty=True,
        extra="ignore",
        populate_by_name=True,
        frozen=True,
    )

    # BALLET_WEBHOOK_SECRET may hold several comma-separated secrets, and
    # BALLET_WEBHOOK_SECRETS adds more: during a rotation both old and new verify.
    webhook_secret: Annotated[tuple[SecretStr, ...], NoDecode] = ()
    webhook_secrets: Annotated[tuple[SecretStr, ...], NoDecode] = ()
    app_id: int | None = None
    private_key: SecretStr | None = None
    private_key_path: Path | None = None
    github_api_url: str = "https://api.github.com"
    # The URL may carry a password, so it is a secret too.
    redis_url: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("REDIS_URL", "BALLET_REDIS_URL")
    )
    data_dir: Path = Path(".ballet-data")
    workspace_dir: Path | None = None
    session_slots: int = Field(default=2, ge=1, le=256)
    # A stage whose session's worker died (OOM kill, eviction) runs again on its
    # own this many times (BALLET_SESSION_CRASH_RETRIES) before a person is asked.
    session_crash_retries: int = Field(default=2, ge=0, le=10)
    event_slots: int = Field(default=10, ge=1, le=1000)
    delivery_dedupe_seconds: int = Field(default=DEFAULT_DEDUPE_SECONDS, ge=60)
    # A failed delivery is retried after this many seconds times its try squared.
    delivery_retry_seconds: float = Field(default=5.0, ge=0)
    # The reconciler sweeps every this many seconds, at the same seconds of each
    # minute on every worker (so once across them): a divisor of 60 (default 30).
    reconcile_seconds: int = Field(default=30, ge=1, le=60)
    # A running session's job beats this often; its heartbeat lives 4 beats, so a
    # dead worker's session is seen as crashed within 4 beats plus a sweep.
    session_heartbeat_seconds: float = Field(default=10.0, gt=0, le=300)
    # A webhook delivery GitHub failed to hand over is asked for again by a sweep
    # once its attempt is this old (its first attempt may still be on its way).
    redelivery_settle_seconds: float = Field(default=30.0, ge=0)
    max_webhook_bytes: int = Field(default=MAX_WEBHOOK_BYTES, ge=1024)
    # The web process's connections (web/guard.py, docs/security.md, Public endpoints):
    # a request's head must arrive within `web_idle_seconds` of connecting or of the
    # last response, its body within `web_body_seconds` of its head, or the connection
    # is closed (408); past `web_max_connections` (lowered to fit the open-file limit)
    # the oldest idle connection is closed, or a newcomer answered 503.
    web_idle_seconds: float = Field(default=5.0, gt=0, le=300)
    web_body_seconds: float = Field(default=10.0, gt=0, le=600)
    web_max_connections: int = Field(default=4096, ge=16)
    # The runtime of repositories without a `.ballet.yml`, and the variables of
    # the worker's environment its sessions may see (their API keys).
    default_adapter: Adapter = "claude-code"
    default_model: str | None = None
    default_runtime_env: Annotated[tuple[str, ...], NoDecode] = (
        "ANTHROPIC_API_KEY",
        "CLAUDE_CODE_OAUTH_TOKEN",
    )
    # Pause between content-creating GitHub requests of one installation: GitHub
    # asks for serial writes "at least one second" apart (and caps them at 80 a
    # minute). 0 turns pacing off: only for a GitHub double such as the sandbox.
    write_spacing_seconds: float = Field(default=1.0, ge=0)
    # GitHub's cap on one installation's content-creating requests in an hour; past
    # it, writes wait for the rolling hour to free a slot (their jobs are deferred).
    writes_per_hour: int = Field(default=500, ge=0)
    # The longest a worker goes without looking at its queues when nobody wakes it.
    # Whoever queues a job wakes the queue's workers (jobs/wakeups.py), so this
    # bounds only what no wake announces: a lost wake (the pub/sub connection
    # down), a session reservation running out (jobs/pools.py). Deferred jobs and
    # cron runs are looked for when due whatever it is. Each look costs a
    # transaction per job at the queue's head, running ones too (docs/performance.md).
    queue_poll_seconds: float = Field(default=1.0, gt=0)
    # A session's "in progress" check run (a merge's, and its tracking edit) is
    # written only if it still runs this long after: a quicker end rewrites it, and
    # it is never written (docs/performance.md, API economy). 0: at once.
    write_grace_seconds: float = Field(default=5.0, ge=0)
    # Agent sessions run in bubblewrap (docs/security.md); `none` runs them as the
    # worker's own processes, which an operator must choose explicitly.
    session_isolation: Literal["bwrap", "none"] = "bwrap"
    # host:port a session may reach besides its provider and its repository's
    # `egress:` (may name this machine, e.g. a local model server at 127.0.0.1:8080).
    session_egress_allow: Annotated[tuple[str, ...], NoDecode] = ()
    # Directories of tools sessions need that are outside the system's and PATH's.
    session_readonly_paths: Annotated[tuple[Path, ...], NoDecode] = ()
    # The most one session may use (docs/security.md, Resource limits), enforced by the
    # kernel: RAM and disk (clone, HOME and /tmp together) as sizes such as 512MiB or
    # 4GiB, processes and threads at once, and cores' worth of CPU (e.g. 1.5).
    # `.ballet.yml` may lower them, never raise them. Unset, a default applies where
    # this worker can enforce it (sessions/confine/limits.py); set, a worker that
    # cannot enforce it refuses to start.
    session_max_memory: str | None = None
    session_max_disk: str | None = None
    session_max_processes: int | None = Field(default=None, ge=MIN_PROCESSES)
    session_max_cpus: float | None = Field(default=None, ge=MIN_CPUS, le=MAX_CPUS)
    # Ballet's web pages (ballet.watch, docs/security.md): the address people reach
    # it at (unset: the address `ballet serve`/`ballet web` listens on), GitHub's web
    # address for "Sign in with GitHub" (unset: derived from the API URL), the App's
    # OAuth client (both unset: nobody can sign in, pages show public repositories'
    # tickets only) and the key that signs session cookies (unset: generated once in
    # BALLET_DATA_DIR/web-session-secret; several web processes must share one).
    public_url: str | None = None
    github_web_url: str | None = None
    github_client_id: str | None = None
    github_client_secret: SecretStr | None = None
    web_session_secret: SecretStr | None = None
    # A session page's live log says it is alive (an SSE comment) after this many quiet
    # seconds, so proxies that cut idle connections keep the stream (default 15).
    live_keepalive_seconds: float = Field(default=15.0, gt=0, le=300)
    # Session logs (docs/operations.md, Session logs): the live tail in a Redis stream
    # of about `log_live_max_lines` lines, the finished log gzip in an object store:
    # BALLET_LOG_STORE unset keeps it under BALLET_DATA_DIR/logs on this machine, else
    # s3://bucket/prefix, gs://bucket/prefix or az://container/prefix, which every web
    # and worker process must share. BALLET_LOG_STORE_OPTIONS, `key=value,…`, adds the
    # store's settings (endpoint, region, credentials, allow_http) to AWS_* and the like.
    # Finished logs are deleted after `log_retention_days`; a log is cut at `log_max_bytes`.
    log_store: str | None = None
    log_store_options: SecretStr | None = None
    log_retention_days: int = Field(default=30, ge=1, le=3650)
    log_live_max_lines: int = Field(default=20_000, ge=100)
    log_max_bytes: int = Field(default=20 * 1024 * 1024, ge=64 * 1024)
    # Agent pools (docs/deploy.md, Agent pools). BALLET_POOLS: which repositories may
    # use which pool, `gpu=acme/ml,acme/vision;secure=acme/*` (core/pools.py; a pool not
    # listed, and every pool when unset, is open to all). The pools this worker serves
    # (`--pool`, or BALLET_WORKER_POOLS), its name in Redis (unique per worker: the host
    # and a random suffix unless set, e.g. to a StatefulSet pod's name that keeps its
    # mirrors), and how long a ticket's next session is kept for the worker that ran
    # its last (its mirror is warm) before any worker of the pool may take it (0: never).
    pools: Annotated[PoolAccess, NoDecode] = PoolAccess()
    worker_pools: Annotated[tuple[str, ...], NoDecode] = (DEFAULT_POOL,)
    worker_id: str = Field(default_factory=lambda: _generated_worker_id())
    session_affinity_seconds: float = Field(default=2.0, ge=0, le=60)
    # BALLET_TRUSTED_BOTS: the bot logins (`renovate[bot]`, compared case-insensitively)
    # whose labels, commands, reviews and answers count as a person's of their permission;
    # any other bot's are refused with a reply (docs/security.md, Text from GitHub).
    trusted_bots: Annotated[frozenset[str], NoDecode] = frozenset()
    # Cost caps per calendar month (UTC) in US dollars, the operator's: the model
    # gateway refuses a session's request once a repository's, or an installation's,
    # metered spend this month reached its cap (core/spend.py). Unset: no such cap.
    budget_repository_monthly_usd: float | None = Field(default=None, gt=0)
    budget_installation_monthly_usd: float | None = Field(default=None, gt=0)
    provider_upstreams: str = ""  # `provider=URL,…` for the model gateway (its upstream.py)
    # The --env-file these settings were read from (it holds secrets: never shown to sessions).
    loaded_from: Path | None = None
    log_level: str = "info"
    log_json: bool = False

    @field_validator("session_egress_allow")
    @classmethod
    def _check_rules(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parse_rule(entry, trusted=True)  # raises with what to write instead
        return value

    @field_validator("session_max_memory", "session_max_disk")
    @classmethod
    def _check_size(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            least = MIN_MEMORY if info.field_name == "session_max_memory" else MIN_DISK
            parse_size(value, minimum=least)  # raises saying what to write instead
        return value

    @field_validator("reconcile_seconds")
    @classmethod
    def _check_reconcile(cls, value: int) -> int:
        if 60 % value:
            raise ValueError(f"{value} does not divide a minute: use e.g. 5, 10, 15, 20 or 30")
        return value

    @field_validator("pools", mode="before")
    @classmethod
    def _parse_pools(cls, value: object) -> object:
        return parse_pool_access(value) if isinstance(value, str) else value

    @field_validator("worker_pools")
    @classmethod
    def _check_pools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("a worker serves at least one pool, e.g. `default`")
        return tuple(dict.fromkeys(check_pool_name(p) for p in value))

    @field_validator("trusted_bots", mode="before")
    @classmethod
    def _parse_bots(cls, value: object) -> object:
        parts = value.split(",") if isinstance(value, str) else value
        if not isinstance(parts, list | tuple | set | frozenset):
            return value
        logins = frozenset(str(part).strip().casefold() for part in parts if str(part).strip())
        for login in logins:
            if not login.endswith("[bot]") or len(login) == len("[bot]"):
                raise ValueError(
                    f"`{login}` is no bot's login: GitHub's bots end in [bot], e.g."
                    " `renovate[bot]` (a machine user is heard as a person already)"
                )
        return logins

    @field_validator("worker_id")
    @classmethod
    def _check_worker_id(cls, value: str) -> str:
        if not _WORKER_ID.match(value):
            raise ValueError(
                f"`{value}` is no worker id: up to 64 letters, digits, `.`, `_` or `-`"
            )
        return value

    @field_validator("public_url", "github_web_url")
    @classmethod
    def _check_address(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise ValueError(
                f"{value!r} is not an http(s) address, e.g. https://ballet.example.com"
            )
        return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))

    @field_validator(
        "default_runtime_env",
        "webhook_secret",
        "webhook_secrets",
        "session_egress_allow",
        "session_readonly_paths",
        "worker_pools",
        mode="before",
    )
    @classmethod
    def _split_commas(cls, value: object) -> object:
        """The comma-separated lists of the environment, as tuples."""
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @property
    def all_webhook_secrets(self) -> tuple[str, ...]:
        """Every accepted webhook secret, in order, without duplicates."""
        values = [s.get_secret_value() for s in (*self.webhook_secret, *self.webhook_secrets)]
        return tuple(dict.fromkeys(v for v in values if v))

    @property
    def session_limits(self) -> LimitValues:
        """The limits the operator set (None where unset: the worker's defaults apply)."""
        size = self.session_max_memory, self.session_max_disk
        return LimitValues(
            memory=parse_size(size[0]) if size[0] else None,
            disk=parse_size(size[1]) if size[1] else None,
            processes=self.session_max_processes,
            cpus=self.session_max_cpus,
        )

    @property
    def workspaces(self) -> Path:
        """Where session workspaces live: BALLET_WORKSPACE_DIR or data_dir/workspaces."""
        return self.workspace_dir or self.data_dir / "workspaces"

    @property
    def web_url(self) -> str:
        """GitHub's web address (sign-in, links): BALLET_GITHUB_WEB_URL or the API URL's."""
        return self.github_web_url or web_url_of(self.github_api_url)

    @property
    def oauth_configured(self) -> bool:
        """Whether people can sign in with GitHub: the App's client id and secret are set."""
        return bool(self.github_client_id and self.github_client_secret)

    def with_listening_address(self, host: str, port: int) -> Settings:
        """These settings, with the address served at as the public URL when none is set."""
        if self.public_url is not None:
            return self
        # A wildcard address is no place a browser can go; this machine is.
        shown = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
        shown = f"[{shown}]" if ":" in shown else shown
        return self.model_copy(update={"public_url": f"http://{shown}:{port}"})

    def private_key_pem(self) -> str | None:
        """The App's private key: BALLET_PRIVATE_KEY, else the file BALLET_PRIVATE_KEY_PATH."""
        if self.private_key is not None:
            pem = self.private_key.get_secret_value()
            # One line with `\n` escapes: the env file /setup writes, read by Ballet or
            # by kubectl into a Secret (setup/envfile.py). A PEM never holds a backslash.
            return pem.replace("\\n", "\n") if "\n" not in pem else pem
        if self.private_key_path is not None:
            try:
                return self.private_key_path.read_text()
            except OSError as exc:
                raise SettingsError(
                    f"cannot read BALLET_PRIVATE_KEY_PATH {self.private_key_path}: {exc.strerror};"
                    " point it at the App's .pem file or set BALLET_PRIVATE_KEY instead"
                ) from exc
        return None

    def require_webhook_secrets(self) -> tuple[str, ...]:
        secrets = self.all_webhook_secrets
        if not secrets:
            raise SettingsError(
                "BALLET_WEBHOOK_SECRET is not set: set it to your GitHub App's webhook secret"
                " (several, comma-separated, while rotating)"
            )
        return secrets

    def require_redis_url(self) -> str:
        if self.redis_url is None:
            raise SettingsError(
                "REDIS_URL is not set: point it at a Redis or Valkey server"
                " (e.g. redis://localhost:6379/0), or use `ballet serve`, which starts its own"
            )
        return self.redis_url.get_secret_value()


_WORKER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _generated_worker_id() -> str:
    host = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname())[:48] or "worker"
    return f"{host}-{secrets.token_hex(3)}"


def web_url_of(api_url: str) -> str:
    """GitHub's web address for its REST API address: github.com for api.github.com,
    `https://HOST` for a GitHub Enterprise Server's `https://HOST/api/v3`,
    `SUB.ghe.com` for `api.SUB.ghe.com`; any other address (the sandbox) serves both."""
    parts = urlsplit(api_url.rstrip("/"))
    host = parts.hostname or ""
    if host == "api.github.com":
        return "https://github.com"
    netloc, path = parts.netloc, parts.path
    if host.startswith("api.") and host.endswith(".ghe.com"):
        netloc = netloc.replace("api.", "", 1)
    if path.endswith("/api/v3"):
        path = path[: -len("/api/v3")]
    return urlunsplit((parts.scheme, netloc, path, "", ""))


def load_settings(env_file: str | Path | None = None) -> Settings:
    """Read the settings from the environment (and `env_file`), explaining any error."""
    if env_file is not None and not Path(env_file).is_file():
        raise SettingsError(f"env file {env_file} does not exist: check the --env-file path")
    try:
        settings = Settings(_env_file=env_file)
        if env_file is not None:
            settings = settings.model_copy(update={"loaded_from": Path(env_file).resolve()})
        return settings
    except ValidationError as exc:
        problems = "; ".join(
            f"BALLET_{'_'.join(str(p) for p in err['loc']).upper()}: {err['msg']}"
            for err in exc.errors()
        )
        raise SettingsError(
            f"invalid settings: {problems}; correct them in the environment"
            " or the --env-file (README.md, Configuration, lists each variable)"
        ) from exc
