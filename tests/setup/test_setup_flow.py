"""First run: `ballet serve` without an App registers one through the manifest flow.

Everything over real HTTP: `ballet serve` in a process of its own, the sandbox
standing in for GitHub's "new App" page and its conversion endpoint, and a
browser-like client keeping cookies. Then the registered App works: a
labelled issue in the sandbox goes to a merged pull request, delivered only
the events the manifest subscribes to.
"""

from __future__ import annotations

import stat
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from ballet.demo import repo as demo
from ballet.sandbox.server import BackgroundSandbox
from ballet.settings import load_settings
from ballet.setup.manifest import manifest_template
from setup_kit import wait_for


class Forms(HTMLParser):
    """The forms of a page: action and their inputs' values, as a browser reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, dict[str, str]]] = []
        self.links: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append((a.get("action", ""), {}))
        elif tag == "input" and self.forms and "name" in a:
            self.forms[-1][1][a["name"]] = a.get("value", "")
        elif tag == "a" and "id" in a:
            self.links[a["id"]] = a.get("href", "")


def parse(html: str) -> Forms:
    forms = Forms()
    forms.feed(html)
    return forms


def give_the_code(browser: httpx.Client, data_dir: Path) -> None:
    """Open /setup as the operator does: asked for the setup code, type it in (loosely)."""
    asked = browser.get("/setup")
    assert asked.status_code == 403 and "Enter the setup code" in asked.text
    action, fields = parse(asked.text).forms[0]
    assert action == "/setup/code"
    typed = (data_dir / "setup-code").read_text().strip().lower().replace("-", " ")
    entered = browser.post(action, data={"form_token": fields["form_token"], "code": typed})
    assert (entered.status_code, entered.headers["location"]) == (303, "/setup")


def start_setup(browser: httpx.Client, data_dir: Path) -> str:
    """Open /setup as the operator does, with the setup code; the form token of the page."""
    give_the_code(browser, data_dir)
    page = browser.get("/setup")
    assert page.status_code == 200 and "Set up Ballet" in page.text
    action, fields = parse(page.text).forms[0]
    assert action == "/setup"
    return fields["form_token"]


def test_setup_registers_the_app_and_ballet_then_works_with_it(
    serve: tuple[str, Path, Path], sandbox: BackgroundSandbox
) -> None:
    url, data_dir, log = serve
    browser = httpx.Client(base_url=url, timeout=30)
    assert browser.get("/").headers["location"] == "/setup"
    token = start_setup(browser, data_dir)

    # Another site cannot post the form: no cookie, or a token that is not the cookie's.
    stranger = httpx.Client(base_url=url, timeout=30)
    forged = {"form_token": token, "public_url": url, "name": "Evil"}
    assert stranger.post("/setup", data=forged).status_code == 403
    assert browser.post("/setup", data={**forged, "form_token": "x"}).status_code == 403
    bad_url = {"form_token": token, "public_url": "ftp://nowhere", "name": "Ballet"}
    assert browser.post("/setup", data=bad_url).status_code == 400

    form = {"form_token": token, "public_url": url, "name": "Ballet Test", "organization": ""}
    posted = browser.post("/setup", data=form)
    assert posted.status_code == 200
    action, fields = parse(posted.text).forms[0]
    assert action.startswith(f"{sandbox.api_url}/settings/apps/new?state=")
    manifest = httpx.Response(200, content=fields["manifest"]).json()
    template = manifest_template()
    assert manifest["name"] == "Ballet Test"
    assert manifest["hook_attributes"]["url"] == f"{url}/webhooks"
    assert manifest["redirect_url"] == f"{url}/setup/callback"
    assert manifest["callback_urls"] == [f"{url}/oauth/callback"]  # sign-in to the pages
    assert manifest["default_permissions"] == template["default_permissions"]
    assert manifest["default_events"] == template["default_events"]

    # The browser posts the manifest to GitHub, which sends it back with a code.
    created = httpx.post(action, data={"manifest": fields["manifest"]}, timeout=30)
    assert created.status_code == 302
    callback = created.headers["location"]
    assert callback.startswith(f"{url}/setup/callback?")
    query = parse_qs(urlsplit(callback).query)
    assert query["state"][0] in posted.text  # GitHub hands the state back unchanged
    code = query["code"][0]
    # Neither a stranger holding the state nor a made-up state gets the App...
    assert stranger.get(callback).status_code == 403
    assert browser.get(f"/setup/callback?code={code}&state=made-up").status_code == 403

    # ...the browser that started the setup does.
    done = browser.get(callback)
    assert done.status_code == 200, done.text
    app = sandbox.sandbox.app
    install = parse(done.text).links["install"]
    assert install == f"{sandbox.api_url}/apps/ballet-test/installations/new"
    env_file = data_dir / "github-app.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    saved = load_settings(env_file)
    assert saved.app_id == app.app_id != 1
    assert saved.private_key_pem() == app.private_key_pem.decode()
    assert saved.all_webhook_secrets == (app.webhook_secret,)
    assert saved.github_api_url == sandbox.api_url
    # The App's OAuth client and the address typed in: the pages' "Sign in with GitHub".
    assert saved.github_client_id == app.client_id
    assert saved.github_client_secret is not None
    assert saved.github_client_secret.get_secret_value() == app.client_secret
    assert saved.public_url == url
    # Ballet restarts with the App's credentials (a request in between may find
    # it restarting); then the state, used once, finds no setup page anymore.
    wait_for(lambda: "restarting with its credentials" in log.read_text(), "a restart", log)
    wait_for(lambda: ready(browser), "ready again", log)
    assert browser.get(callback).status_code == 404
    assert browser.get("/setup").status_code == 404
    assert browser.post("/setup/code", data={"code": "x"}).status_code == 404
    assert not (data_dir / "setup-code").exists()  # spent

    # Ballet now acts as the registered App, on the events it subscribed to alone.
    admin = httpx.Client(base_url=sandbox.api_url, timeout=30)
    admin.post("/_sandbox/repos", json=demo.new_repo_request("after-setup")).raise_for_status()
    repo = f"{demo.OWNER}/after-setup"
    person = httpx.Client(
        base_url=sandbox.api_url,
        headers={"Authorization": f"token sandbox-user:{demo.AUTHOR}"},
        timeout=30,
    )
    issue = person.post(
        f"/repos/{repo}/issues", json={"title": demo.ISSUE_TITLE, "body": demo.ISSUE_BODY}
    )
    number = issue.json()["number"]
    person.post(f"/repos/{repo}/issues/{number}/labels", json={"labels": ["ballet"]})

    def state() -> Any:
        return admin.get(f"/_sandbox/repos/{repo}/state").json()

    def asks_a_person() -> bool:
        now = state()
        ready = [pull for pull in now["pulls"] if not pull["draft"] and not pull["merged"]]
        return bool(ready) and any("the agents are done" in c["body"] for c in now["comments"])

    # People decide what lands: a writer's review of the head (pull_request_review,
    # one of the events the App subscribed to) lands it.
    wait_for(asks_a_person, "Ballet asking a person to approve the head", log, limit=120)
    (pull,) = state()["pulls"]
    reviewer = httpx.Client(
        base_url=sandbox.api_url, headers={"Authorization": "token sandbox-user:carol"}, timeout=30
    )
    reviewer.post(
        f"/repos/{repo}/pulls/{pull['number']}/reviews",
        json={"event": "APPROVE", "commit_id": pull["head_sha"]},
    ).raise_for_status()

    def merged() -> bool:
        return any(pull["merged"] for pull in state()["pulls"])

    wait_for(merged, "the ticket's pull request merged", log, limit=120)
    subscribed = set(manifest["default_events"]) | {"installation", "installation_repositories"}
    sent = {d["event"] for d in admin.get("/_sandbox/deliveries").json()}
    assert sent <= subscribed


def ready(client: httpx.Client) -> bool:
    try:
        return client.get("/readyz").status_code == 200
    except httpx.TransportError:
        return False  # between the two servers of a restart
