"""The ticket's draft pull request in a companion: opened once, found again on a retry.

The engine asks for it (`OpenCompanionPR`) when a session first pushed commits
to the ticket's branch there; the branch exists (the session's push made it), so
only the pull request is made, from it to the companion's default branch. An
open pull request of that branch is reused: a retried effect, a redelivery or a
record rebuilt from GitHub before its number was kept opens nothing twice.

As each one opens, every pull request of the ticket (the ticket's own too) is
linked to all the others in Ballet's marked block of its body (`LinkPullRequest`):
only that block is rewritten, what a person wrote around it stays, and a block
that already says it is not written again (a redelivery, a retried effect).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ballet.core.companion_text import with_links
from ballet.core.effects import LinkPullRequest, OpenCompanionPR
from ballet.core.events import CompanionPROpened
from ballet.github.forge import Forge, ForgeError


async def open_companion_pr(
    forge: Forge, effect: OpenCompanionPR, clock: Callable[[], datetime]
) -> CompanionPROpened:
    repo = effect.repo
    pr = await forge.find_pr_by_head(repo, effect.branch)
    if pr is None:
        base = await forge.default_branch(repo)
        try:
            pr = await forge.open_draft_pr(
                repo, head=effect.branch, base=base, title=effect.title, body=effect.body
            )
        except ForgeError as exc:
            # Opened meanwhile (GitHub says 422 for a second one): take that one.
            pr = await forge.find_pr_by_head(repo, effect.branch) if exc.status == 422 else None
            if pr is None:
                raise
    return CompanionPROpened(now=clock(), repo=repo, number=pr.number, head_sha=pr.head_sha)


async def link_pull_request(forge: Forge, effect: LinkPullRequest) -> None:
    pr = await forge.get_pr(effect.repo, effect.number)
    body = with_links(pr.body, effect.block)
    if body != pr.body:
        await forge.set_pr_body(effect.repo, effect.number, body)
