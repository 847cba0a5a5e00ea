"""Request bodies read under a route's own size limit (not the app's global one)."""

from __future__ import annotations

from litestar import Request
from litestar.exceptions import InternalServerException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge


async def limited_body(request: Request, limit: int) -> bytes:
    """The body, 413 past `limit` bytes: at once from Content-Length, else while
    receiving, so an oversized body is never read whole. Read from the ASGI messages,
    not `request.stream()`, which needs an HTTP route handler: the /mcp mount uses it."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise RequestEntityTooLarge
    received = bytearray()
    while (message := await request.receive())["type"] == "http.request":
        received += message.get("body", b"")
        if len(received) > limit:
            raise RequestEntityTooLarge
        if not message.get("more_body", False):
            return bytes(received)
    raise InternalServerException("client disconnected prematurely")  # as stream() does
