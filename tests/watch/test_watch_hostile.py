"""Hostile viewers: none of them finds a word of a private repository's logs, and none
of them gets a command queued.

The world: installation A (`acme`) with a public repository and a private one,
installation B (`globex`) with a private one, each private ticket with a finished
session's log and a running session's live lines carrying a marker. A writer of
acme/secret sees its log (the control that the markers would be found); then:

- an outsider, signed in, with no access to the private repository;
- a forged session cookie (a signature tampered with, or a payload swapped);
- a read-only collaborator pressing Cancel;
- a cross-site POST without the CSRF token (and with it, from another origin);
- a person with access to installation A's private repository asking for
  installation B's.
"""

from __future__ import annotations

import base64

import httpx
import pytest
from ballet.core.record import Record
from ballet.tickets.store import RecordStore
from itsdangerous import URLSafeTimedSerializer
from watch_kit import (
    Site,
    csrf_of,
    finish_session,
    finished_log,
    forms_of,
    lines,
    new_ticket,
    queued_commands,
)

pytestmark = pytest.mark.anyio

ACME = "ACME-PRIVATE-LOG-7f3a"
GLOBEX = "GLOBEX-PRIVATE-LOG-91c2"
SECRET = "/tickets/acme/secret/1"
VAULT = "/tickets/globex/vault/1"


def urls(ticket: str) -> list[str]:
    """Every URL of a ticket: its page, its sessions', their downloads and live streams."""
    finished = f"{ticket}/sessions/implement/1/1"
    running = f"{ticket}/sessions/review/1/1"
    return [
        ticket,
        finished,
        f"{finished}/log.txt",
        f"{finished}/live",
        running,
        f"{running}/log.txt",
        f"{running}/live?after=0-0",
    ]


async def private_ticket(site: Site, repo: str, marker: str) -> Record:
    record = await new_ticket(site, repo, 1, f"The {marker} ticket")
    implement = record.open_run
    assert implement is not None and implement.job_key is not None
    record = await finish_session(site, record, "done", "implemented")
    await finished_log(site, implement.job_key, [f"{marker} finished", "tests pass"])
    review = record.open_run
    assert review is not None and review.job_key is not None
    await site.logs.append(review.job_key, lines([f"{marker} running"]))
    return record


async def world(site: Site) -> dict[str, Record]:
    await site.create_repo("acme", "open", private=False, collaborators={"alice": "write"})
    await site.create_repo(
        "acme", "secret", private=True, collaborators={"alice": "write", "rita": "read"}
    )
    await site.create_repo("globex", "vault", private=True, collaborators={"gina": "admin"})
    await new_ticket(site, "acme/open", 1, "A public ticket")
    return {
        "acme/secret": await private_ticket(site, "acme/secret", ACME),
        "globex/vault": await private_ticket(site, "globex/vault", GLOBEX),
    }


async def seen(browser: httpx.AsyncClient, url: str) -> httpx.Response:
    """What the browser gets at `url`; a live stream read until its first event."""
    if not url.split("?")[0].endswith("/live"):
        return await browser.get(url)
    async with browser.stream("GET", url) as response:
        body = b""
        if response.status_code == 200:
            async for chunk in response.aiter_bytes():
                body += chunk
                if b"event:" in body:
                    break
        else:
            body = await response.aread()
        return httpx.Response(response.status_code, content=body, headers=response.headers)


async def assert_hidden(browser: httpx.AsyncClient, ticket: str, *markers: str) -> None:
    """Every URL of `ticket` answers the one 404, none with a marker in it; the listing
    and the home page name neither the ticket nor a marker."""
    blank = (await browser.get("/tickets/nobody/nothing/404")).text.replace(
        "/tickets/nobody/nothing/404", "PATH"
    )
    for url in urls(ticket):
        response = await seen(browser, url)
        assert response.status_code == 404, (url, response.status_code)
        for marker in markers:
            assert marker not in response.text, url
        # The same page as for a ticket that never existed: nothing tells them apart.
        assert response.text.replace(url.split("?")[0], "PATH") == blank, url
    for url in ("/", "/tickets"):
        text = (await browser.get(url)).text
        assert ticket not in text and not any(m in text for m in markers)


async def test_a_writer_sees_the_private_log_the_others_never_do(site: Site) -> None:
    await world(site)

    # The control: a writer of acme/secret reads its logs, finished and live.
    alice = await site.sign_in("alice")
    finished = await alice.get(f"{SECRET}/sessions/implement/1/1")
    assert finished.status_code == 200 and f"{ACME} finished" in finished.text
    assert f"{ACME} finished" in (await alice.get(f"{SECRET}/sessions/implement/1/1/log.txt")).text
    live = await seen(alice, f"{SECRET}/sessions/review/1/1/live?after=0-0")
    assert live.status_code == 200 and f"{ACME} running" in live.text
    assert SECRET in (await alice.get("/tickets")).text

    # Signed out, and an outsider signed in: no trace of either private ticket.
    async with site.browser() as anonymous:
        await assert_hidden(anonymous, SECRET, ACME, GLOBEX)
        await assert_hidden(anonymous, VAULT, ACME, GLOBEX)
        assert "/tickets/acme/open/1" in (await anonymous.get("/tickets")).text
    olga = await site.sign_in("olga")
    await assert_hidden(olga, SECRET, ACME, GLOBEX)
    await assert_hidden(olga, VAULT, ACME, GLOBEX)

    # Another installation's private ticket, to someone who may read installation A's.
    await assert_hidden(alice, VAULT, GLOBEX)
    assert GLOBEX not in (await alice.get("/tickets")).text
    await alice.aclose()
    await olga.aclose()


async def test_a_forged_session_cookie_is_no_session(site: Site) -> None:
    await world(site)
    olga = await site.sign_in("olga")
    cookie = olga.cookies["ballet_session"]
    await olga.aclose()
    payload, timestamp, signature = cookie.rsplit(".", 2)

    # olga's cookie with one letter of its signature changed: the first, all six of
    # whose bits are the MAC's (the last letter's lowest two are padding, which
    # base64 decoding ignores: changing only those would leave the MAC as it was).
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    # alice's login in olga's payload, under olga's signature.
    data = URLSafeTimedSerializer(b"x").serializer.loads(_unb64(payload))
    swapped = (
        base64.urlsafe_b64encode(
            URLSafeTimedSerializer(b"x").serializer.dumps({**data, "login": "alice"}).encode()
        )
        .decode()
        .rstrip("=")
    )
    # And one signed with a key of the forger's own.
    minted = URLSafeTimedSerializer(b"not-ballets-key", salt="ballet.watch.session").dumps(
        {"login": "alice", "id": 1, "csrf": "c" * 43}
    )
    for forged in (
        f"{payload}.{timestamp}.{flipped}",
        f"{swapped}.{timestamp}.{signature}",
        minted,
    ):
        async with httpx.AsyncClient(
            base_url=site.web_url, cookies={"ballet_session": forged}, timeout=30
        ) as forger:
            home = await forger.get("/")
            assert "Signed in as" not in home.text and "Sign in with GitHub" in home.text
            await assert_hidden(forger, SECRET, ACME, GLOBEX)
            refused = await forger.post(f"{SECRET}/commands/cancel", data={"csrf": "c" * 43})
            assert refused.status_code == 403 and ACME not in refused.text
    assert await queued_commands(site.redis) == []


async def test_a_reader_pressing_cancel_is_refused_and_nothing_is_queued(site: Site) -> None:
    records = await world(site)
    rita = await site.sign_in("rita")
    page = await rita.get(SECRET)
    assert page.status_code == 200
    # A reader is shown no button...
    assert not [f for f in forms_of(page.text) if "/commands/" in f]
    # ...and pressing one anyway, with her own valid CSRF token, is refused.
    refused = await rita.post(f"{SECRET}/commands/cancel", data={"csrf": csrf_of(page.text)})
    assert refused.status_code == 403
    assert "needs write permission" in refused.text and ACME not in refused.text
    assert await queued_commands(site.redis) == []
    assert await RecordStore(site.redis).cached("acme/secret#1") == records["acme/secret"]
    await rita.aclose()


async def test_a_cross_site_post_is_refused(site: Site) -> None:
    records = await world(site)
    alice = await site.sign_in("alice")
    page = await alice.get(SECRET)
    token = csrf_of(page.text)
    assert f"{SECRET}/commands/cancel" in forms_of(page.text)
    cancel = f"{SECRET}/commands/cancel"
    attempts: list[tuple[dict[str, str], dict[str, str]]] = [
        ({}, {}),  # no token: another site cannot read it
        ({"csrf": "x" * 43}, {}),  # a token of its own making
        ({"csrf": token}, {"Origin": "https://evil.example"}),  # another origin
        ({"csrf": token}, {"Sec-Fetch-Site": "cross-site"}),
        ({"csrf": token}, {"Sec-Fetch-Site": "same-site"}),  # a sibling host is a site too
    ]
    for form, headers in attempts:
        refused = await alice.post(cancel, data=form, headers=headers)
        assert refused.status_code == 403, (form, headers)
        assert ACME not in refused.text
    # Signing out is a POST too: refused without the token (still signed in).
    assert (await alice.post("/logout", headers={"Origin": site.web_url})).status_code == 403
    assert "Signed in as" in (await alice.get("/")).text
    assert await queued_commands(site.redis) == []
    assert await RecordStore(site.redis).cached("acme/secret#1") == records["acme/secret"]

    # The same press from the page itself is taken (queued: no worker runs here).
    taken = await alice.post(
        cancel,
        data={"csrf": token},
        headers={"Origin": site.web_url, "Sec-Fetch-Site": "same-origin"},
    )
    assert taken.status_code == 303 and taken.headers["location"] == f"{SECRET}?sent=cancel"
    assert len(await queued_commands(site.redis)) == 1
    # And signing out with the token ends the session.
    out = await alice.post("/logout", data={"csrf": token})
    assert out.status_code == 303
    await assert_hidden(alice, SECRET, ACME)
    await alice.aclose()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
