"""The setup flow's HTML pages: plain, self-contained, every value escaped."""

from __future__ import annotations

import json
from html import escape
from typing import Any

STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;"
    "line-height:1.5;color:#1f2328}label{display:block;margin-top:1rem;font-weight:600}"
    "input[type=text],input[type=url]{width:100%;padding:.4rem;font-size:1rem}"
    "button{margin-top:1.5rem;padding:.5rem 1rem;font-size:1rem}"
    ".note{color:#59636e;font-size:.9rem}code{background:#f6f8fa;padding:0 .2rem}"
)


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )


def start_page(public_url: str, name: str, form_token: str, github_web_url: str) -> str:
    return _page(
        "Set up Ballet",
        "<p>Ballet has no GitHub App yet. This page registers one on "
        f"<a href='{escape(github_web_url)}'>{escape(github_web_url)}</a> with GitHub's App "
        "manifest flow: GitHub shows you the App's name, permissions and events, you "
        "confirm, and Ballet saves the App's id, private key and webhook secret.</p>"
        "<form method=post action='/setup'>"
        f"<input type=hidden name=form_token value='{escape(form_token)}'>"
        "<label for=public_url>Public address of this Ballet</label>"
        f"<input type=url id=public_url name=public_url value='{escape(public_url)}' required>"
        "<p class=note>GitHub sends webhooks to <code>&lt;address&gt;/webhooks</code>, "
        "brings you back to <code>&lt;address&gt;/setup/callback</code>, and signs people "
        "in to Ballet's pages through <code>&lt;address&gt;/oauth/callback</code>. On a "
        "laptop, use a tunnel's address (smee.io, ngrok, cloudflared).</p>"
        "<label for=name>App name</label>"
        f"<input type=text id=name name=name value='{escape(name)}' maxlength=34 required>"
        "<label for=organization>Organisation (optional)</label>"
        "<input type=text id=organization name=organization maxlength=39>"
        "<p class=note>Leave empty to own the App yourself; an organisation's owners "
        "can register Apps for it.</p>"
        "<button type=submit>Register the App on GitHub</button></form>",
    )


def code_page(form_token: str, *, wrong: bool = False) -> str:
    """Asks for the one-time setup code, and says where the operator finds it."""
    again = "<p><strong>That is not the setup code.</strong> Check it and try again.</p>"
    return _page(
        "Enter the setup code",
        (again if wrong else "")
        + "<p>Only the person running this Ballet may register its GitHub App. "
        "<code>ballet serve</code> printed a one-time setup code in its log when it "
        "started (<code>open …/setup and enter the setup code XXXX-XXXX-XXXX</code>), and "
        "keeps it in the file <code>setup-code</code> of its data directory "
        "(<code>BALLET_DATA_DIR</code>, <code>.ballet-data/</code> by default), readable "
        "only by the account it runs as.</p>"
        "<form method=post action='/setup/code'>"
        f"<input type=hidden name=form_token value='{escape(form_token)}'>"
        "<label for=code>Setup code</label>"
        "<input type=text id=code name=code autocomplete=off spellcheck=false required>"
        "<button type=submit>Continue</button></form>",
    )


def redirect_page(action: str, manifest: dict[str, Any]) -> str:
    """Posts the manifest to GitHub: at once with JavaScript, by a click without."""
    return _page(
        "Registering Ballet on GitHub",
        f"<form id=manifest method=post action='{escape(action)}'>"
        f"<input type=hidden name=manifest value='{escape(json.dumps(manifest))}'>"
        "<p>Continue on GitHub to review and create the App.</p>"
        "<button type=submit>Continue to GitHub</button></form>"
        "<script>document.getElementById('manifest').submit()</script>",
    )


def done_page(name: str, html_url: str, env_file: str) -> str:
    install = f"{html_url}/installations/new"
    return _page(
        "Ballet is registered",
        f"<p>The GitHub App <strong>{escape(name)}</strong> exists, and its id, private key, "
        "webhook secret and OAuth client (for signing in to Ballet's pages) are saved in "
        f"<code>{escape(env_file)}</code> (readable by its owner only). Ballet restarts "
        "with them now; this setup page is gone.</p>"
        f"<p><a id=install href='{escape(install)}'>Install the App</a> on the "
        "repositories Ballet should work on, then label an issue <code>ballet</code>.</p>",
    )


def error_page(title: str, message: str) -> str:
    return _page(title, f"<p>{escape(message)}</p><p><a href='/setup'>Start again</a></p>")
