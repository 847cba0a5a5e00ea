"""`/mcp`: chatsvc's tools for other agents, over MCP's streamable HTTP transport.

An ASGI mount rather than handlers: the MCP SDK speaks the protocol. The bearer-token
middleware runs in front of it like any route (no token: 401), and the SDK's app,
started with the service (`chatsvc.tools.http_endpoint`), is looked up per request
(`_provide.mounted_mcp`): a mount gets no dependency injection.
"""

from __future__ import annotations

from litestar import Request, Router, asgi
from litestar.exceptions import MethodNotAllowedException
from litestar.types import Message, Receive, Scope, Send

from chatsvc.routes._body import limited_body
from chatsvc.routes._provide import mounted_mcp


@asgi("/mcp", is_mount=True, copy_scope=True)
async def mcp_endpoint(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] != "POST":
        # Stateless mode has no server-initiated stream for a GET to hold open (the SDK
        # kept one open, empty, as long as the client liked) and no session to DELETE:
        # the transport allows a 405 for both.
        raise MethodNotAllowedException(headers={"Allow": "POST"})
    # A mount is outside the app's request_max_body_size, and the SDK reads a body of
    # any size: read it here under that limit (413 past it), then hand it on.
    body = await limited_body(Request(scope, receive), scope["litestar_app"].request_max_body_size)
    await mounted_mcp(scope)(scope, _replayed(body, receive), send)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body, already read, as its first message."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return replay


router = Router(path="/", route_handlers=[mcp_endpoint], tags=["mcp"])
