"""Every URL of the pages, in one table (the web app adds it to its own).

A session is named by its ticket, stage (`signoff-<role>` for a sign-off),
iteration, attempt and, for a phased stage, phase: the parts of its job key
(`core.routing.job_key`). `log.txt` and `live` come before `{phase}` so that
they are never read as a phase's name.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from ballet.watch import actions, fleet, listing, live, live_pages, pages, sessions, signin, spend

TICKET = "/tickets/{owner}/{repo}/{number:int}"
SESSION = TICKET + "/sessions/{stage}/{iteration:int}/{attempt:int}"

ROUTES: list[BaseRoute] = [
    Route("/", pages.home, methods=["GET"]),
    Route("/tickets", listing.tickets, methods=["GET"]),
    Route("/tickets/live", live_pages.listing_live, methods=["GET"]),
    Route("/fleet", fleet.fleet, methods=["GET"]),
    Route("/fleet/live", live_pages.listing_live, methods=["GET"]),
    Route(TICKET, pages.ticket, methods=["GET"]),
    Route(TICKET + "/live", live_pages.ticket_live, methods=["GET"]),
    Route(TICKET + "/commands/{verb}", actions.command, methods=["POST"]),
    Route(SESSION, sessions.session_page, methods=["GET"]),
    Route(SESSION + "/log.txt", sessions.raw_log, methods=["GET"]),
    Route(SESSION + "/live", live.live, methods=["GET"]),
    Route(SESSION + "/{phase}", sessions.session_page, methods=["GET"]),
    Route(SESSION + "/{phase}/log.txt", sessions.raw_log, methods=["GET"]),
    Route(SESSION + "/{phase}/live", live.live, methods=["GET"]),
    Route("/spend/{owner}/{repo}", spend.repository_spend, methods=["GET"]),
    Route("/login", signin.login, methods=["GET"]),
    Route(signin.CALLBACK_PATH, signin.callback, methods=["GET"]),
    Route("/logout", signin.logout, methods=["POST"]),
]
