"""Provisioning users, tokens and service keys: the one place both the admin HTTP API
(chatsvc/routes/admin.py) and the command line (`chatsvc users`, `chatsvc keys`) go
through, so both check names and time zones alike and show the same fields."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from chatsvc._errors import InvalidAccount
from store import NotFound, Token, User, UserStore

MAX_NAME_CHARS = 200


def _name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidAccount("name", "must be a non-empty string")
    if len(name) > MAX_NAME_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InvalidAccount("name", f"must be one line of at most {MAX_NAME_CHARS} "
                                     "characters, without control characters")
    return name.strip()


def _timezone(timezone: object) -> str:
    if not isinstance(timezone, str):
        raise InvalidAccount("timezone", "must be an IANA zone name, e.g. Europe/Paris")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidAccount("timezone", f"{timezone!r} is not an IANA zone name, "
                                         "e.g. Europe/Paris") from None
    return timezone


def new_user(users: UserStore, name: object, *, timezone: object = "UTC",
             admin: object = False) -> tuple[User, str]:
    """A person's account and its first token (shown once)."""
    if not isinstance(admin, bool):
        raise InvalidAccount("admin", "must be true or false")
    return users.add(_name(name), admin=admin, timezone=_timezone(timezone))


def new_key(users: UserStore, name: object) -> tuple[User, str]:
    """A front end's service account and its first key (shown once)."""
    return users.add(_name(name), kind="service")


def new_token(users: UserStore, user_id: str) -> tuple[Token, str]:
    """One more token for an account (a service account's: one more key)."""
    user = users.get(user_id)
    if user.kind not in ("user", "service"):
        raise InvalidAccount("id", f"a {user.kind.replace('_', ' ')} has no tokens: "
                                   "the key or token it came through acts for it")
    return users.issue(user_id)


def service_key(users: UserStore, key_id: str) -> Token:
    """The service key `key_id`; NotFound for any other token."""
    key = users.token(key_id)
    if users.get(key.user_id).kind != "service":
        raise NotFound(f"no service key {key_id}")
    return key


def user_json(user: User) -> dict:
    return {"id": user.id, "name": user.name, "kind": user.kind, "is_admin": user.is_admin,
            "timezone": user.timezone, "owner_id": user.owner_id,
            "external_id": user.external_id, "created_at": user.created_at,
            "revoked_at": user.revoked_at}


def token_json(token: Token) -> dict:
    return {"id": token.id, "user_id": token.user_id, "user_name": token.user_name,
            "created_at": token.created_at, "revoked_at": token.revoked_at}
