"""`pool:` in `.ballet.yml` and the deployment's BALLET_POOLS: shapes, positions,
resolution (a stage's pool wins over its runtime's; a role takes its runtime's)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from ballet.cli import main
from ballet.commands.lifecycle import with_pools
from ballet.core.events import TicketRequested
from ballet.core.machine import advance
from ballet.core.pools import PoolAccess, parse_pool_access
from ballet.core.resolve import resolve_pipeline
from ballet.core.session_spec import session_spec
from ballet.core.validate import ConfigError, parse_config
from ballet.settings import SettingsError, load_settings
from config_helpers import only_error, valid

POOLED = """\
runtimes:
  gpu: {adapter: codex, pool: gpu}
  plain: {adapter: codex}
default_runtime: plain
roles:
  security: {runtime: gpu}
pipelines:
  default:
    stages:
      - {id: implement, kind: agent, runtime: gpu, pool: secure}
      - {id: review, kind: agent, runtime: gpu}
      - {id: verify, kind: agent}
"""


def test_a_stage_pool_wins_over_its_runtime_pool_and_roles_take_their_runtime_pool() -> None:
    pipeline = resolve_pipeline(valid(POOLED), [])
    assert [s.pool for s in pipeline.stages] == ["secure", "gpu", None]
    assert pipeline.roles["security"].runtime_config.pool == "gpu"


def test_the_session_spec_carries_the_resolved_pool() -> None:
    pipeline = resolve_pipeline(valid(POOLED), [])
    now = datetime(2026, 1, 1, tzinfo=UTC)
    rec, _ = advance(
        None,
        TicketRequested(
            now=now,
            repo="acme/ml",
            issue=1,
            author="a",
            title="t",
            pipeline=pipeline,
            default_branch="main",
        ),
    )
    pools = [session_spec(rec, s, None, None, "").pool for s in ("implement", "review", "verify")]
    assert pools == ["secure", "gpu", "default"]
    assert session_spec(rec, "implement", None, "security", "").pool == "gpu"


@pytest.mark.parametrize("name", ["GPU", "gpu_1", "-gpu", "a" * 33, "1gpu"])
def test_a_malformed_pool_name_is_refused_at_its_value(name: str) -> None:
    error = only_error(POOLED.replace("pool: secure", f"pool: '{name}'"))
    assert (error.line, error.column) == (10, 58)
    assert "write a pool name: a lowercase letter" in error.message


def test_a_platform_stage_takes_no_pool() -> None:
    text = POOLED.replace(
        "      - {id: verify, kind: agent}",
        "      - {id: verify, kind: platform, action: merge, pool: gpu}",
    )
    error = only_error(text)
    assert (error.line, error.column) == (12, 53)
    assert "a platform stage runs no agent, so it takes no `pool`" in error.message


def test_a_pool_the_repository_may_not_use_is_refused_at_each_pool_value() -> None:
    access = parse_pool_access("gpu=acme/ml,acme/vision;secure=acme/*")
    may_use = lambda pool: access.allows("other/web", pool)  # noqa: E731
    errors = valid_errors(POOLED, may_use)
    assert [(e.line, e.column) for e in errors] == [(2, 31), (10, 58)]
    assert "may not use pool `gpu`" in errors[0].message
    assert "may not use pool `secure`" in errors[1].message
    assert "acme/ml" not in errors[0].message  # the other repositories are not told
    assert valid(POOLED, may_use_pool=lambda pool: access.allows("acme/ml", pool))


def valid_errors(text: str, may_use: Callable[[str], bool]) -> list[ConfigError]:
    result = parse_config(text, may_use_pool=may_use)
    assert isinstance(result, list)
    return result


def test_pool_access_rules() -> None:
    access = parse_pool_access(" gpu = acme/ml , Acme/Vision ; secure=acme/* ;")
    assert access.rules == {"gpu": ("acme/ml", "Acme/Vision"), "secure": ("acme/*",)}
    assert access.allows("acme/ml", "gpu") and access.allows("ACME/vision", "gpu")
    assert not access.allows("acme/web", "gpu")
    assert access.allows("acme/anything", "secure") and not access.allows("other/x", "secure")
    assert access.allows("other/x", "default") and access.allows("other/x", "unlisted")
    assert PoolAccess().allows("any/repo", "gpu")
    assert parse_pool_access(access.render()) == access


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("gpu", "names no pool"),
        ("=acme/x", "names no pool"),
        ("GPU=acme/x", "is not a pool name"),
        ("gpu=", "lists no repository"),
        ("gpu=acme", "is not owner/name or owner/*"),
        ("gpu=*/x", "is not owner/name or owner/*"),
        ("gpu=acme/x;gpu=acme/y", "listed twice"),
        ("default=acme/*", "open to every repository"),
    ],
)
def test_malformed_pool_access_says_what_to_write(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_pool_access(text)


def test_a_malformed_ballet_pools_stops_a_worker_at_start_saying_what_to_write(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BALLET_POOLS", "gpu=acme")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    assert main(["worker"]) == 2
    said = capsys.readouterr().err
    assert "BALLET_POOLS" in said and "`acme` (pool `gpu`) is not owner/name or owner/*" in said
    assert "gpu=acme/ml,acme/vision;secure=acme/*" in said


def test_a_malformed_pool_flag_is_refused_saying_what_a_pool_name_is() -> None:
    # (`ballet worker` turns a SettingsError into its message and exit code 2, as above.)
    with pytest.raises(SettingsError, match="--pool: `GPU` is not a pool name: a lowercase"):
        with_pools(load_settings(), argparse.Namespace(pool=["gpu", "GPU"]))


def test_the_pool_flags_and_settings_name_the_pools_a_worker_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BALLET_WORKER_POOLS", "gpu, default,gpu")
    settings = load_settings()
    assert settings.worker_pools == ("gpu", "default")
    assert settings.pools == PoolAccess() and settings.session_affinity_seconds == 2.0
    assert settings.worker_id != load_settings().worker_id  # one per worker process
    args = argparse.Namespace(pool=["big", "big", "default"])
    assert with_pools(settings, args).worker_pools == ("big", "default")
    assert with_pools(settings, argparse.Namespace(pool=None)) is settings
