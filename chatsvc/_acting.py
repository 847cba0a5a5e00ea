"""Whom a request acts for: a token's own user, a JWT's subject (chatsvc._jwt) or, for
a service key, the end user it names. That end user's id comes in CHATSVC_USER_HEADER
(or OpenAI's `user` field on /v1/chat/completions; the header wins), their display name
in CHATSVC_USER_NAME_HEADER. End users hang off the key's account (a JWT's: its
issuer's), so two front ends never share one, whatever ids they use. A plain token or
a JWT that names someone else is refused: each acts for its own user only.
"""

from __future__ import annotations

from urllib.parse import unquote

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.exceptions import (
    ClientException,
    NotAuthorizedException,
    PermissionDeniedException,
    SerializationException,
    ServiceUnavailableException,
)
from litestar.types import Receive

from chatsvc._jwt import InvalidJwt, JwksUnavailable, looks_like_jwt
from chatsvc._threads import in_thread
from store import User, UserExists

MAX_ID_CHARS = 256
MAX_NAME_CHARS = 200
# The one route whose body may name the end user (OpenAI's `user` field).
OPENAI_CHAT_PATH = "/v1/chat/completions"


def _checked(value: str, where: str, max_chars: int) -> str:
    value = value.strip()
    if not value:
        raise ClientException(f"{where} is empty")
    if len(value) > max_chars:
        raise ClientException(f"{where} is longer than {max_chars} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ClientException(f"{where} holds control characters")
    return value


def header_value(connection: ASGIConnection, header: str, max_chars: int) -> str | None:
    raw = connection.headers.get(header)
    if raw is None:
        return None
    return _checked(_utf8(raw), f"the {header} header", max_chars)


def _utf8(raw: str) -> str:
    """ASGI hands header bytes over as latin-1; front ends send UTF-8 names."""
    try:
        return raw.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return raw


def _display_name(connection: ASGIConnection, header: str) -> str | None:
    """The end user's name; percent-decoded, as Open WebUI sends it ("J%C3%BCrgen" for
    Jürgen: HTTP headers are ASCII), a raw UTF-8 name as it is."""
    name = header_value(connection, header, MAX_NAME_CHARS * 3)
    return None if name is None else _checked(unquote(name), f"the {header} header",
                                              MAX_NAME_CHARS)


async def _body_user(connection: ASGIConnection, receive: Receive) -> str | None:
    """OpenAI's `user` field of a /v1/chat/completions body (read once: the handler
    gets the same parsed body)."""
    if connection.scope["path"] != OPENAI_CHAT_PATH or connection.scope["method"] != "POST":
        return None
    try:
        body = await Request(connection.scope, receive).json()
    except SerializationException:
        raise ClientException("invalid value for body: not valid JSON") from None
    named = body.get("user") if isinstance(body, dict) else None
    if named is None:
        return None
    if not isinstance(named, str):
        raise ClientException("user must be a string: the end user's id")
    return _checked(named, "user", MAX_ID_CHARS)


async def acting_user(connection: ASGIConnection, token: str, receive: Receive) -> User:
    services = connection.app.state.services
    header = services.settings.user_header
    external = header_value(connection, header, MAX_ID_CHARS)
    if services.jwt is not None and looks_like_jwt(token):
        if external is not None:
            raise PermissionDeniedException(
                f"a JWT acts for its subject only: drop the {header} header")
        return await _jwt_user(services, token)
    resolved = await in_thread(services.stores.users.resolve, token, external)
    if resolved is None:
        raise NotAuthorizedException("invalid or revoked token")
    account = resolved.account
    if not account.is_service:
        if external is not None:
            raise PermissionDeniedException(
                f"only a service key may act for another user: drop the {header} header")
        return account
    name = _display_name(connection, services.settings.user_name_header)
    if external is None:
        external = await _body_user(connection, receive)
        if external is None:
            raise ClientException(f"a service key acts for an end user: send their id in the "
                                  f"{header} header")
        return await _end_user(services, account, external, name)
    return await _end_user(services, account, external, name, resolved.end_user)


async def _jwt_user(services, token: str) -> User:
    try:
        subject = await services.jwt.subject(token)
    except InvalidJwt as exc:
        raise NotAuthorizedException(f"invalid JWT: {exc}") from None
    except JwksUnavailable as exc:
        raise ServiceUnavailableException(str(exc)) from None
    users = services.stores.users
    try:
        issuer = await in_thread(users.issuer, services.jwt.namespace)
    except UserExists as exc:
        raise NotAuthorizedException(f"JWTs are refused: {exc}") from None
    if issuer.revoked_at is not None:
        raise NotAuthorizedException("this issuer's tokens are revoked")
    return await _end_user(services, issuer, subject.id, subject.name)


async def _end_user(services, owner: User, external: str, name: str | None,
                    found: User | None = None) -> User:
    """The end user `external` of `owner` (`found` when the caller has it already):
    created on first sight unless CHATSVC_AUTO_USERS is off, renamed when `name` says
    they are called otherwise now."""
    users = services.stores.users
    if found is None:
        found = await in_thread(users.find_end_user, owner.id, external)
    if found is None:
        if not services.settings.auto_users:
            raise PermissionDeniedException(
                f"end user {external!r} is unknown and CHATSVC_AUTO_USERS is off")
        return await in_thread(users.end_user, owner.id, external, name or external)
    if name is not None and name != found.name:
        return await in_thread(users.rename, found.id, name)
    return found
