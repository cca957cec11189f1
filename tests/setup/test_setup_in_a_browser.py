"""The setup flow in a real browser: headless Chromium clicks through /setup.

It is asked for the setup code first, and types the one `ballet serve` keeps in
its data dir. The page's own JavaScript posts the manifest to (the sandbox's) GitHub, the
browser follows GitHub's redirect back to /setup/callback with its cookie,
and the done page links to the App's installation. A screenshot of each page
is kept in the test's temporary directory. Skipped where Debian's `chromium`
is not installed (`apt-get install chromium`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ballet.sandbox.server import BackgroundSandbox
from ballet.settings import load_settings
from browser import Browser, chromium_binary

PNG = b"\x89PNG\r\n\x1a\n"


def test_a_person_registers_the_app_in_chromium(
    serve: tuple[str, Path, Path], sandbox: BackgroundSandbox, tmp_path: Path
) -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    url, data_dir, _ = serve
    code = (data_dir / "setup-code").read_text().strip()
    with Browser(binary, tmp_path / "profile") as browser:
        browser.goto(f"{url}/")
        browser.wait_for(
            "location.pathname === '/setup' && !!document.querySelector('#code')",
            "the root page leads to /setup, which asks for the setup code",
        )
        assert browser.screenshot(tmp_path / "code.png").startswith(PNG)
        browser.evaluate(f"document.querySelector('#code').value = {code!r}")
        browser.evaluate("document.querySelector('form').submit()")
        browser.wait_for(
            "location.pathname === '/setup' && !!document.querySelector('#public_url')",
            "the code let the browser through to the setup form",
        )
        assert browser.evaluate("document.querySelector('#public_url').value") == url
        assert browser.screenshot(tmp_path / "setup.png").startswith(PNG)
        browser.evaluate("document.querySelector('#name').value = 'Ballet Browser'")
        browser.evaluate("document.querySelector('form').submit()")
        browser.wait_for(
            "location.pathname === '/setup/callback' && !!document.querySelector('#install')",
            "GitHub sent the browser back and the App is registered",
        )
        install = browser.evaluate("document.querySelector('#install').href")
        heading = browser.evaluate("document.querySelector('h1').textContent")
        assert browser.screenshot(tmp_path / "registered.png").startswith(PNG)
    assert heading == "Ballet is registered"
    assert install == f"{sandbox.api_url}/apps/ballet-browser/installations/new"
    app = sandbox.sandbox.app
    assert app.name == "Ballet Browser"
    saved = load_settings(data_dir / "github-app.env")
    assert saved.app_id == app.app_id
    assert saved.all_webhook_secrets == (app.webhook_secret,)
