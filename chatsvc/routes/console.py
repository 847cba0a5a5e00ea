"""The built-in console: GET / (the page) and /static/... (its CSS, JS and icon).

Everything is served from the package; the page talks to the JSON API with the
bearer token the user pastes in (kept in the tab's sessionStorage), so these
routes need no auth themselves (see PUBLIC_PATHS in chatsvc._auth).
"""

from __future__ import annotations

from pathlib import Path

from litestar import MediaType, Response, Router, get
from litestar.connection import ASGIConnection
from litestar.datastructures import CacheControlHeader
from litestar.exceptions import NotFoundException
from litestar.handlers import BaseRouteHandler
from litestar.static_files import create_static_files_router

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

# Only our own files may run or be fetched: no inline script, no third-party origin.
CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# The page is tiny: always revalidate so a deploy is seen on the next load.
_REVALIDATE = CacheControlHeader(no_cache=True)


@get("/", include_in_schema=False, cache_control=_REVALIDATE)
async def console_page() -> Response[bytes]:
    # A plain response (read per request, it is tiny): File would add a
    # `content-disposition` with an empty file name to the page itself.
    return Response(
        (STATIC_DIR / "index.html").read_bytes(),
        media_type=MediaType.HTML,  # Litestar appends the one `charset=utf-8`
        headers={"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"},
    )


def _no_nul(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    # The file system refuses a NUL in a path with a ValueError (a 500): no such file.
    if "\x00" in connection.url.path:
        raise NotFoundException()


static_files = create_static_files_router(
    path="/static", directories=[STATIC_DIR], cache_control=_REVALIDATE,
    include_in_schema=False, guards=[_no_nul],
)

router = Router(path="/", route_handlers=[console_page, static_files])
