"""`ballet serve` restarts itself once /setup registered an App; a SIGTERM as it
restarts, or after, stops it whole: web app, worker and embedded Valkey, none of
them left running (a Valkey outliving its serve holds the data dir and a port)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest
from ballet.sandbox.server import BackgroundSandbox
from process_namespaces import alive, children
from setup_kit import serving, wait_for
from test_setup_flow import parse, start_setup


def register(url: str, data_dir: Path) -> None:
    """The manifest flow as a browser goes through it, quickly."""
    browser = httpx.Client(base_url=url, timeout=30)
    token = start_setup(browser, data_dir)
    form = {"form_token": token, "public_url": url, "name": "Ballet Restarts"}
    action, fields = parse(browser.post("/setup", data=form).text).forms[0]
    created = httpx.post(action, data={"manifest": fields["manifest"]}, timeout=30)
    assert browser.get(created.headers["location"]).status_code == 200


@pytest.mark.parametrize("when", ["as it restarts", "once restarted"])
def test_serve_stops_whole_on_sigterm_after_an_app_is_registered(
    tmp_path: Path, sandbox: BackgroundSandbox, when: str
) -> None:
    with serving(tmp_path, sandbox) as served:
        valkeys = children(served.process.pid)
        assert valkeys, "no embedded Valkey"
        register(served.url, served.data_dir)
        if when == "once restarted":
            wait_for(
                lambda: httpx.get(f"{served.url}/setup").status_code == 404,
                "serve restarted with the App",
                served.log,
            )
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=30) == 0, served.log.read_text()
    assert not any(alive(pid) for pid in valkeys), served.log.read_text()
    assert "embedded valkey stopped" in served.log.read_text()
