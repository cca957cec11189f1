"""A POST's form, and whether it came from one of this Ballet's own pages (CSRF).

Every form a page shows carries the viewer's CSRF token, which lives in the
signed session cookie: a POST counts only when the two match. Another site can
make a browser send the cookie (not on a POST: it is SameSite=Lax) but never
read the token. Where the browser says where a request came from (`Origin`,
`Sec-Fetch-Site`), it must be this Ballet too.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request

from ballet.watch.cookies import Viewer

MAX_FORM_BYTES = 16 * 1024


async def form_of(request: Request) -> dict[str, str]:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return {}
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in parsed.items() if values}


def csrf_refusal(
    request: Request, viewer: Viewer | None, form: dict[str, str], public_url: str
) -> str | None:
    """Why this POST is refused, or None when it is the viewer's own."""
    if viewer is None:
        return "you are not signed in (or your session ended): sign in and try again"
    token = form.get("csrf", "")
    if not token or not hmac.compare_digest(token.encode(), viewer.csrf.encode()):
        return "this form was not sent from one of this Ballet's pages: reload the page"
    origin = request.headers.get("origin")
    # The address configured, or the one this request was sent to (another site's page
    # cannot send a browser's request to this host under this host's name).
    own = (_origin(public_url), _origin(str(request.base_url)))
    if origin is not None and origin not in own:
        return "this request came from another site"
    # "none": typed or bookmarked by the person; anything else but same-origin is a site.
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return "this request came from another site"
    return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
