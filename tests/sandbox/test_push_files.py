"""A push webhook lists each commit's added, removed and modified files, as GitHub's
does: Ballet reads them to know whether a push to the default branch changed
`.ballet.yml` (tickets/config_roles.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
from ballet.sandbox.server import BackgroundSandbox

from .conftest import Receiver, authed_url, make_repo, push_branch, settle


def test_a_push_lists_each_commits_files(
    sandbox: BackgroundSandbox, admin: httpx.Client, receiver: Receiver, tmp_path: Path
) -> None:
    make_repo(admin)
    url = authed_url(sandbox, "sandbox-user:writer")
    push_branch(tmp_path, url, "main", {"a.txt": "one"})
    push_branch(tmp_path, url, "main", {"a.txt": "two", ".ballet.yml": "trigger_label: go\n"})
    settle(admin)
    pushes = [d.payload for d in receiver.received if d.event == "push"]
    first, second = (
        [(c["added"], c["removed"], c["modified"]) for c in p["commits"]] for p in pushes[-2:]
    )
    assert first == [(["a.txt"], [], [])]
    assert second == [([".ballet.yml"], [], ["a.txt"])]
