"""Ballet's block of links in a pull request's body: rewritten alone, people's words kept."""

from __future__ import annotations

from ballet.core.companion_text import LINKS_CLOSE, LINKS_OPEN, with_links
from ballet.core.effects import LinkPullRequest
from ballet.core.events import CompanionPROpened
from core_kit import Ticket, make_pipeline

OLD = f"{LINKS_OPEN}\nPart of octo/app#1, with octo/app#8.\n{LINKS_CLOSE}"
NEW = f"{LINKS_OPEN}\nPart of octo/app#1, with octo/app#8, octo/api#3.\n{LINKS_CLOSE}"


def test_only_ballets_block_is_rewritten() -> None:
    body = f"Mind the migration.\n\n{OLD}\n\nOpened by Ballet.\n\nPS"
    assert with_links(body, NEW) == f"Mind the migration.\n\n{NEW}\n\nOpened by Ballet.\n\nPS"
    assert with_links(with_links(body, NEW), NEW) == with_links(body, NEW)


def test_a_body_without_the_block_gets_it_at_its_end() -> None:
    assert with_links("Closes #1\n\n", NEW) == f"Closes #1\n\n{NEW}"
    assert with_links("", NEW) == NEW
    # A closing marker before any opening one is not a block: the block is added.
    assert with_links(f"{LINKS_CLOSE} x", NEW) == f"{LINKS_CLOSE} x\n\n{NEW}"


def test_each_pull_request_is_linked_to_all_the_others_as_one_opens() -> None:
    t = Ticket(make_pipeline(companions=("octo/lib", "octo/api")))
    t.open_pr(number=8)
    n = t.rec.ticket.number
    t.finish("done", sha="c1", companion_heads={"octo/lib": "l1", "octo/api": "a1"})
    t.feed(CompanionPROpened(now=t.now(), repo="octo/lib", number=34, head_sha="l1"))
    links = {(e.repo, e.number): e.block for e in t.of(LinkPullRequest)}
    assert set(links) == {("octo/lib", 34), ("octo/app", 8)}
    assert f"Part of octo/app#{n}, with octo/lib#34." in links[("octo/app", 8)]
    t.feed(CompanionPROpened(now=t.now(), repo="octo/api", number=3, head_sha="a1"))
    links = {(e.repo, e.number): e.block for e in t.of(LinkPullRequest)}
    assert set(links) == {("octo/lib", 34), ("octo/api", 3), ("octo/app", 8)}
    assert f"Part of octo/app#{n}, with octo/app#8, octo/api#3." in links[("octo/lib", 34)]
    assert f"Part of octo/app#{n}, with octo/app#8, octo/lib#34." in links[("octo/api", 3)]
    assert f"Part of octo/app#{n}, with octo/lib#34, octo/api#3." in links[("octo/app", 8)]
