"""Conditional GETs answered with 304, and the webhook target moved at run time."""

from __future__ import annotations

import httpx
from ballet.sandbox.server import BackgroundSandbox

from .conftest import Receiver, make_repo, settle

WRITER = {"Authorization": "token sandbox-user:writer"}


def test_repeated_get_with_etag_is_not_modified_until_it_changes(admin: httpx.Client) -> None:
    make_repo(admin)
    first = admin.get("/repos/octo/demo", headers=WRITER)
    etag = first.headers["etag"]
    again = admin.get("/repos/octo/demo", headers={**WRITER, "If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    admin.post("/repos/octo/demo/issues", json={"title": "t"}, headers=WRITER)
    changed = admin.get("/repos/octo/demo", headers={**WRITER, "If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.json()["open_issues_count"] == 1
    assert changed.headers["etag"] != etag


def test_webhook_url_can_be_moved_and_is_checked(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver
) -> None:
    assert admin.put("/_sandbox/webhook", json={"url": None}).status_code == 200
    make_repo(admin)
    settle(admin)
    assert receiver.received == []
    assert admin.get("/_sandbox/deliveries").json()[0]["error"] == "no --webhook-url configured"
    assert admin.put("/_sandbox/webhook", json={"url": receiver.url}).status_code == 200
    admin.post("/repos/octo/demo/issues", json={"title": "t"}, headers=WRITER)
    settle(admin)
    assert receiver.events() == [("issues", "opened")]
    refused = admin.put("/_sandbox/webhook", json={"url": "ftp://x"})
    assert refused.status_code == 422
    assert "not an http(s) URL" in refused.json()["message"]
