"""The GitHub App manifest Ballet registers itself with, and GitHub's web addresses.

The manifest (`github-app.yml` beside this module, copied to
manifests/github-app.yml) holds the App's permissions and events; the setup
page fills in the URLs from the address GitHub reaches Ballet at.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any, cast
from urllib.parse import urlencode, urlsplit, urlunsplit

import yaml

from ballet.settings import web_url_of

__all__ = ["SetupInputError", "build_manifest", "new_app_url", "public_url_of", "web_url_of"]

MANIFEST_FILE = "github-app.yml"
# GitHub limits an App's name to 34 characters; an organisation login to 39.
MAX_APP_NAME = 34
ORGANIZATION = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$")


class SetupInputError(ValueError):
    """A value typed into the setup page cannot be used; the message says why."""


def manifest_template() -> dict[str, Any]:
    text = resources.files("ballet.setup").joinpath(MANIFEST_FILE).read_text()
    return cast(dict[str, Any], yaml.safe_load(text))


def public_url_of(text: str) -> str:
    """The public address as typed, checked: http(s), a host, no query or fragment."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SetupInputError(
            f"{text!r} is not an http(s) address: give the URL GitHub reaches this Ballet"
            " at, e.g. https://ballet.example.com"
        )
    if parts.query or parts.fragment:
        raise SetupInputError(f"{text!r} has a query or a fragment: give the bare address")
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def build_manifest(public_url: str, name: str) -> dict[str, Any]:
    """The manifest to post to GitHub, its URLs pointing at `public_url`."""
    name = name.strip()
    if not 1 <= len(name) <= MAX_APP_NAME:
        raise SetupInputError(f"the App's name must have 1 to {MAX_APP_NAME} characters")
    manifest = manifest_template()
    manifest["name"] = name
    manifest["url"] = manifest["url"].format(public_url=public_url)
    manifest["redirect_url"] = manifest["redirect_url"].format(public_url=public_url)
    manifest["callback_urls"] = [u.format(public_url=public_url) for u in manifest["callback_urls"]]
    hook = dict(manifest["hook_attributes"])
    hook["url"] = hook["url"].format(public_url=public_url)
    manifest["hook_attributes"] = hook
    return manifest


def new_app_url(web_url: str, organization: str | None, state: str) -> str:
    """Where the browser posts the manifest: a personal or an organisation's new App."""
    if organization:
        if not ORGANIZATION.match(organization):
            raise SetupInputError(f"{organization!r} is not an organisation's login")
        path = f"/organizations/{organization}/settings/apps/new"
    else:
        path = "/settings/apps/new"
    return f"{web_url}{path}?{urlencode({'state': state})}"
