"""Bearer-token authentication and the admin guard (a service key's end users:
chatsvc._acting)."""

from __future__ import annotations

import hmac

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers import BaseRouteHandler
from litestar.middleware import (
    AbstractAuthenticationMiddleware,
    AuthenticationResult,
    DefineMiddleware,
)
from litestar.types import Receive, Scope, Send

from chatsvc._acting import acting_user
from chatsvc._threads import in_thread
from store import User

# Routes the middleware leaves alone: health, the OpenAPI schema, the console page (no
# token needed), and /metrics, which checks its own (`metrics_reader`).
PUBLIC_PATHS = ["^/health$", "^/schema", "^/$", "^/static/"]
SELF_CHECKED_PATHS = ["^/metrics$"]
_RECEIVE = "chatsvc.receive"


def _bearer_token(connection: ASGIConnection) -> str | None:
    scheme, _, token = connection.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def bearer_token(connection: ASGIConnection) -> str:
    token = _bearer_token(connection)
    if token is None:
        raise NotAuthorizedException("missing bearer token: send Authorization: Bearer <token>")
    return token


async def user_of(connection: ASGIConnection, token: str) -> User:
    user = await _authenticate(connection, token)
    if user is None:
        raise NotAuthorizedException("invalid or revoked token")
    return user


async def caller(connection: ASGIConnection) -> User | None:
    """The user whose valid token the request carries, else None (public routes use
    it to show more to a signed-in caller)."""
    token = _bearer_token(connection)
    return None if token is None else await _authenticate(connection, token)


async def _authenticate(connection: ASGIConnection, token: str) -> User | None:
    return await in_thread(connection.app.state.services.stores.users.authenticate, token)


class BearerAuth(AbstractAuthenticationMiddleware):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The base class hands authenticate_request a connection that cannot read the
        # body; a service key may name its end user in /v1/chat/completions' body.
        scope[_RECEIVE] = receive
        await super().__call__(scope, receive, send)

    async def authenticate_request(self, connection: ASGIConnection) -> AuthenticationResult:
        user = await acting_user(connection, bearer_token(connection),
                                 connection.scope[_RECEIVE])
        return AuthenticationResult(user=user, auth=None)


def auth_middleware() -> DefineMiddleware:
    return DefineMiddleware(BearerAuth, exclude=PUBLIC_PATHS + SELF_CHECKED_PATHS)


async def metrics_reader(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    """Guard of GET /metrics: CHATSVC_METRICS_TOKEN (a scraper is no user), or an admin's."""
    token = bearer_token(connection)
    expected = connection.app.state.services.settings.metrics_token
    if expected and hmac.compare_digest(token.encode(), expected.encode()):
        return
    if not (await user_of(connection, token)).is_admin:
        raise PermissionDeniedException("this route needs an admin token or CHATSVC_METRICS_TOKEN")


def admin_only(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    if not connection.user.is_admin:
        raise PermissionDeniedException("this route needs an admin token")
