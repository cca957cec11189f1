"""Every real delivery parses with the lenient envelope; odd shapes never raise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ballet.github.payloads import parse_delivery


def test_every_real_payload_parses(webhooks_dir: Path) -> None:
    paths = sorted(webhooks_dir.glob("*/*.json"))
    assert len(paths) == 111
    for path in paths:
        event = path.parent.name
        payload = json.loads(path.read_bytes())
        envelope = parse_delivery(event, payload)
        assert envelope.event == event
        assert envelope.action == payload.get("action"), path
        assert envelope.sender is not None and envelope.sender.login, path
        if "repository" in payload:
            repo = payload["repository"]
            assert envelope.repository is not None
            assert envelope.repository.full_name == repo["full_name"]
            assert envelope.repository.default_branch == repo["default_branch"]
            assert envelope.repository.owner_login == repo["owner"]["login"]
        if isinstance(payload.get("installation"), dict):
            assert envelope.installation_id == payload["installation"]["id"]


def test_the_labeled_issue_envelope(webhooks_dir: Path) -> None:
    payload = json.loads((webhooks_dir / "issues" / "labeled.payload.json").read_bytes())
    envelope = parse_delivery("issues", payload)
    assert envelope.action == "labeled"
    assert envelope.repository is not None
    assert envelope.repository.full_name == "Codertocat/Hello-World"
    assert envelope.sender is not None and envelope.sender.type == "User"
    assert envelope.installation_id is None


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"action": 7, "repository": "Codertocat/Hello-World", "sender": []},
        {"repository": {"full_name": None, "owner": "x"}, "installation": {"id": "abc"}},
        {"event": "spoofed", "sender": {"login": 5, "type": "Bot", "site_admin": "?"}},
    ],
)
def test_fields_of_unexpected_shape_become_none(payload: dict[str, object]) -> None:
    envelope = parse_delivery("issues", payload)
    assert envelope.event == "issues"
    assert envelope.action is None
    assert envelope.installation_id is None
    assert envelope.repository is None or envelope.repository.full_name is None
