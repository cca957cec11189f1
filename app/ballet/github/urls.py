"""Where a repository's git lives, derived from the API URL Ballet talks to.

- `https://api.github.com` → `https://github.com/<owner>/<repo>.git`
- GitHub Enterprise `https://host/api/v3` → `https://host/<owner>/<repo>.git`
- anything else (the sandbox, `http://127.0.0.1:8765`) serves git beside its
  API: `<api_url>/<owner>/<repo>.git`.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def git_url(api_url: str, repo: str) -> str:
    parts = urlsplit(api_url.rstrip("/"))
    host, path = parts.netloc, parts.path
    if host == "api.github.com":
        host, path = "github.com", ""
    elif path.endswith("/api/v3"):
        path = path.removesuffix("/api/v3")
    return urlunsplit((parts.scheme, host, f"{path}/{repo}.git", "", ""))
