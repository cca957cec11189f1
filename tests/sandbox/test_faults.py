"""`/_sandbox/faults`: seeded, only the App's requests, each kind shaped like GitHub's."""

from __future__ import annotations

from collections import Counter

import httpx
from ballet.sandbox.server import BackgroundSandbox

from .conftest import make_repo, token_for

WRITER = {"Authorization": "token sandbox-user:writer"}


def _storm(admin: httpx.Client, token: str, seed: int) -> list[tuple[int, str | None]]:
    plan = {
        "rate": 0.5,
        "kinds": ["502", "secondary_rate_limit", "timeout"],
        "seed": seed,
        "retry_after_seconds": 7,
        "timeout_seconds": 0.05,
    }
    assert admin.post("/_sandbox/faults", json=plan).status_code == 201
    app = {"Authorization": f"token {token}"}
    seen = []
    for _ in range(40):
        got = admin.get("/repos/octo/demo", headers=app)
        seen.append((got.status_code, got.headers.get("retry-after")))
        if got.status_code >= 400:
            assert got.json()["message"]
    summary = admin.delete("/_sandbox/faults").json()
    assert summary["requests"] == 40
    assert sum(summary["injected"].values()) == sum(1 for s, _ in seen if s != 200)
    return seen


def test_faults_fail_a_seeded_share_of_the_apps_requests(
    admin: httpx.Client, sandbox: BackgroundSandbox
) -> None:
    make_repo(admin)
    token = token_for(sandbox)
    first = _storm(admin, token, seed=1)
    again = _storm(admin, token, seed=1)
    assert first == again  # the same seed, the same storm
    statuses = Counter(s for s, _ in first)
    assert set(statuses) == {200, 403, 502, 504}, statuses
    assert 8 <= sum(n for s, n in statuses.items() if s != 200) <= 32
    assert {r for s, r in first if s == 403} == {"7"}  # a secondary limit says when to retry
    # People, git and the admin API never meet a fault; after DELETE the App neither.
    assert admin.post("/_sandbox/faults", json={"rate": 1, "kinds": ["502"]}).status_code == 201
    assert admin.get("/repos/octo/demo", headers=WRITER).status_code == 200
    assert admin.get("/_sandbox/faults").json()["injected"] == {}
    assert (
        admin.get("/repos/octo/demo", headers={"Authorization": f"token {token}"}).status_code
        == 502
    )
    admin.delete("/_sandbox/faults")
    assert (
        admin.get("/repos/octo/demo", headers={"Authorization": f"token {token}"}).status_code
        == 200
    )
    assert admin.get("/_sandbox/faults").json() is None


def test_a_bad_fault_plan_is_refused_saying_what_to_send(admin: httpx.Client) -> None:
    refused = admin.post("/_sandbox/faults", json={"rate": 2, "kinds": ["boom"]})
    assert refused.status_code == 422
    assert '"rate": 0.2' in refused.json()["message"]
    fields = {e["field"] for e in refused.json()["errors"]}
    assert {"rate", "kinds.0"} <= fields
