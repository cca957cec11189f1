"""`/tickets`: the tickets in flight and those ended lately, of repositories the viewer reads.

Read from the ticket index (tickets/ticket_index.py), never by scanning the
records: the live tickets' summaries, and the latest `ENDED_SHOWN` ended ones
across the readable repositories (each repository's latest are kept apart, so
a viewer of one quiet repository still sees its own). The page follows new
transitions live (`live_pages.py`).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ballet.tickets.ticket_index import TicketIndex
from ballet.watch.render import page
from ballet.watch.state import viewer_of, watch_state
from ballet.watch.views import summary_row

ENDED_SHOWN = 100


async def tickets(request: Request) -> Response:
    state = watch_state(request)
    viewer = await viewer_of(request)
    index = TicketIndex(state.redis)
    await index.ensure_built(state.store.records())
    stamp = await index.changed()  # before reading: a commit after it is streamed
    readable, unknown = await state.access.readable(await index.repos(), viewer)
    live = [s for s in await index.summaries(await index.live()) if s.repo in readable]
    ended = await index.summaries(await index.recently_ended(sorted(readable), ENDED_SHOWN))
    return page(
        state.templates,
        request,
        "tickets.html",
        viewer,
        sign_in=state.config.sign_in,
        live=[summary_row(s) for s in live],
        ended=[summary_row(s) for s in ended if not s.live],
        unknown=unknown,
        live_stamp=stamp,
    )
