"""Bearer-token authentication and the admin guard."""

from __future__ import annotations

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers import BaseRouteHandler
from litestar.middleware import (
    AbstractAuthenticationMiddleware,
    AuthenticationResult,
    DefineMiddleware,
)

from chatsvc._threads import in_thread

# Routes reachable without a token: health, the OpenAPI schema, the console page.
PUBLIC_PATHS = ["^/health$", "^/schema", "^/$", "^/static/"]


class BearerAuth(AbstractAuthenticationMiddleware):
    async def authenticate_request(self, connection: ASGIConnection) -> AuthenticationResult:
        header = connection.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise NotAuthorizedException("missing bearer token: send Authorization: Bearer <token>")
        users = connection.app.state.services.stores.users
        user = await in_thread(users.authenticate, token.strip())
        if user is None:
            raise NotAuthorizedException("invalid or revoked token")
        return AuthenticationResult(user=user, auth=None)


def auth_middleware() -> DefineMiddleware:
    return DefineMiddleware(BearerAuth, exclude=PUBLIC_PATHS)


def admin_only(connection: ASGIConnection, _: BaseRouteHandler) -> None:
    if not connection.user.is_admin:
        raise PermissionDeniedException("this route needs an admin token")
