"""A real headless Chromium (Debian's `chromium`) driven over the DevTools protocol.

`--remote-debugging-pipe` makes Chromium read DevTools commands from its file
descriptor 3 and write replies and events to 4, each JSON message ending in a
NUL byte: no WebSocket client and no driver download needed.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1000,800",
    "--remote-debugging-pipe",
)


def _high(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(Exception):
    pass


class Browser:
    """One Chromium with one page; `evaluate` runs JavaScript in it."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        # Above 9, so that placing them at 3 and 4 never overwrites one with the other.
        to_browser_read = _high(to_browser_read)
        from_browser_write = _high(from_browser_write)
        # bash puts the pipes at descriptors 3 and 4, where Chromium expects them (dash
        # takes no descriptor above 9).
        command = " ".join([binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"])
        self._process = subprocess.Popen(
            ["bash", "-c", f"exec {command} 3<&{to_browser_read} 4>&{from_browser_write}"],
            pass_fds=(to_browser_read, from_browser_write),
            stdout=subprocess.DEVNULL,
            stderr=self._log_file(profile),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self._session: str | None = None

    @staticmethod
    def _log_file(profile: Path) -> int:
        profile.mkdir(parents=True, exist_ok=True)
        return os.open(profile / "chromium.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    def __enter__(self) -> Browser:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]
        self.send("Page.enable")
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._process.kill()
        self._process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a command and wait for its reply (events in between are dropped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self._session is not None and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read(timeout=30)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(left, 0))
            if not ready:
                raise BrowserError("Chromium did not answer")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise BrowserError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def goto(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str, limit: float = 30.0) -> None:
        """Until `expression` is truthy in the page (navigations reset the page's context)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                if self.evaluate(expression):
                    return
            except BrowserError:
                pass  # the page is between two documents
            time.sleep(0.1)
        raise AssertionError(f"{what}: the page is {self.evaluate('location.href')}")

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        path.write_bytes(data)
        return data
