"""`/setup` answers only to the one-time setup code `ballet serve` logs and keeps.

Without the code, or with a wrong one, every `/setup` route is 403 with a page
saying where to find it, and no App is registered; the code lives in
BALLET_DATA_DIR/setup-code (0600), the same across restarts until setup is done.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from ballet.settings import SettingsError
from ballet.setup.code import (
    ALPHABET,
    CODE_FILE,
    forget_setup_code,
    is_the_code,
    normalised,
    setup_code,
)
from setup_kit import serving
from test_setup_flow import parse

WHERE = "keeps it in the file <code>setup-code</code> of its data directory"


def test_the_code_is_made_once_owner_only_and_kept_until_forgotten(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    code = setup_code(data_dir)
    assert re.fullmatch(rf"[{ALPHABET}]{{4}}-[{ALPHABET}]{{4}}-[{ALPHABET}]{{4}}", code)
    path = data_dir / CODE_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == code + "\n"
    assert setup_code(data_dir) == code  # the next start reuses it
    assert [p.name for p in data_dir.iterdir()] == [CODE_FILE]  # no temporary left behind
    forget_setup_code(data_dir)
    assert not path.exists()
    forget_setup_code(data_dir)  # nothing to forget: fine
    assert setup_code(data_dir) != code  # a new setup, a new code


def test_a_damaged_code_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / CODE_FILE).write_text("0000-OOOO\n")
    code = setup_code(tmp_path)
    assert code != "0000-OOOO" and (tmp_path / CODE_FILE).read_text() == code + "\n"


def test_a_data_dir_that_cannot_hold_the_code_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SettingsError, match="cannot hold the one-time setup code"):
        setup_code(blocker / "data")


def test_the_code_is_typed_loosely_but_matched_exactly() -> None:
    assert normalised(" k7qm-4xhp r9tb ") == "K7QM4XHPR9TB"
    assert is_the_code("K7QM-4XHP-R9TB", "k7qm 4xhp r9tb")
    assert not is_the_code("K7QM-4XHP-R9TB", "K7QM-4XHP-R9TC")
    assert not is_the_code("K7QM-4XHP-R9TB", "")
    assert not is_the_code("K7QM-4XHP-R9TB", "K7QM-4XHP-R9TBé")  # any text, no crash


def test_without_the_code_every_setup_route_is_refused_and_nothing_registered(
    tmp_path: Path, sandbox: BackgroundSandbox
) -> None:
    with serving(tmp_path, sandbox) as served:
        code_file = served.data_dir / CODE_FILE
        code = code_file.read_text().strip()
        assert stat.S_IMODE(code_file.stat().st_mode) == 0o600
        logged = served.log.read_text()
        assert f"open {served.url}/setup and enter the setup code {code}" in logged

        stranger = httpx.Client(base_url=served.url, timeout=30)
        asked = stranger.get("/setup")
        assert asked.status_code == 403 and WHERE in asked.text
        assert code not in asked.text
        action, fields = parse(asked.text).forms[0]
        token = fields["form_token"]
        form = {"form_token": token, "public_url": served.url, "name": "Evil"}
        refused = stranger.post("/setup", data=form)
        assert refused.status_code == 403 and WHERE in refused.text
        callback = stranger.get("/setup/callback", params={"code": "made-up", "state": "x"})
        assert callback.status_code == 403 and WHERE in callback.text
        for wrong in ("", "AAAA-AAAA-AAAA", code + "X", code[:-1]):
            tried = stranger.post(action, data={"form_token": token, "code": wrong})
            assert tried.status_code == 403 and "That is not the setup code" in tried.text
        assert stranger.get("/setup").status_code == 403  # still asked: nothing let through
        # Another site's form cannot give the code for this browser: no matching cookie.
        forged = httpx.post(f"{served.url}/setup/code", data={"form_token": token, "code": code})
        assert forged.status_code == 403
        assert stranger.get("/setup").status_code == 403

        assert not (served.data_dir / "github-app.env").exists()
        assert "GitHub App registered" not in served.log.read_text()
        # Four wrong codes, three lines (the 1st, 2nd and 4th): a flood writes few.
        assert served.log.read_text().count("wrong setup codes entered") == 3

    # Until setup is done, every start offers the same code.
    with serving(tmp_path, sandbox) as again:
        assert code_file.read_text().strip() == code
        assert f"enter the setup code {code}" in again.log.read_text()
        browser = httpx.Client(base_url=again.url, timeout=30)
        _, fields = parse(browser.get("/setup").text).forms[0]
        typed = {"form_token": fields["form_token"], "code": code}
        assert browser.post("/setup/code", data=typed).status_code == 303
        page = browser.get("/setup")
        assert page.status_code == 200 and "Set up Ballet" in page.text
