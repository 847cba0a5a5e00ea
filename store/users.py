"""Users, their bearer tokens and the end users of service accounts.

A token is `<token_id>.<secret>`. Only sha256(secret) is stored; lookups go by
token_id and the hash is compared with `hmac.compare_digest`, so neither the
database nor the comparison leaks the secret. A user holds any number of tokens,
each revoked on its own. A `service` account's tokens are service keys: each request
names one of the account's end users (`kind = 'end_user'`, `owner_id` the account,
`external_id` the front end's id for them), found in the same query as the token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from store._errors import ConstraintViolation, NotFound, StoreError
from store.clock import new_id, now_iso
from store.contract import Database
from store.sql import record

ACCOUNT_KINDS = ("user", "service")  # the kinds that are given tokens
_COLUMNS = ("id", "name", "is_admin", "kind", "owner_id", "external_id", "timezone",
            "created_at", "revoked_at")


@dataclass(frozen=True)
class User:
    id: str
    name: str
    is_admin: bool
    timezone: str
    created_at: str
    revoked_at: str | None
    kind: str = "user"
    owner_id: str | None = None
    external_id: str | None = None

    @property
    def is_service(self) -> bool:
        return self.kind == "service"


@dataclass(frozen=True)
class Token:
    """A token's public part: its id (the text before the dot) and whose it is."""
    id: str
    user_id: str
    user_name: str
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True)
class Resolved:
    """Who a token belongs to and, for a service key, the end user it named (None when
    that end user does not exist yet or none was named)."""
    account: User
    end_user: User | None


class UserExists(StoreError):
    """A user with that name exists already."""


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def user_of(row) -> User:
    return record(User, row, is_admin=bool(row["is_admin"]))


def _prefixed(row, prefix: str) -> User | None:
    if row[f"{prefix}id"] is None:
        return None
    values = {name: row[f"{prefix}{name}"] for name in _COLUMNS}
    return User(**{**values, "is_admin": bool(values["is_admin"])})


def _select_as(alias: str) -> str:
    return ", ".join(f"{alias}.{name} AS {alias}_{name}" for name in _COLUMNS)


# One indexed lookup per request: the token (primary key), its account, and the end
# user it names (the (owner_id, external_id) index). Nothing is cached, so a revoked
# token or account fails on its very next request.
_RESOLVE = (
    f"SELECT t.secret_hash, {_select_as('a')}, {_select_as('e')} FROM tokens t "
    "JOIN users a ON a.id = t.user_id "
    "LEFT JOIN users e ON e.owner_id = a.id AND e.external_id = $external "
    "WHERE t.id = $token AND t.revoked_at IS NULL AND a.revoked_at IS NULL"
)
_TOKENS = ("SELECT t.id, t.user_id, u.name AS user_name, t.created_at, t.revoked_at "
           "FROM tokens t JOIN users u ON u.id = t.user_id")


class Users:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, name: str, *, admin: bool = False, timezone: str = "UTC",
            kind: str = "user") -> tuple[User, str]:
        """Create an account (a person, or a front end's `service` account); return it
        with its first token (shown once, never stored)."""
        if kind not in ACCOUNT_KINDS:
            raise StoreError(f"kind must be one of {', '.join(ACCOUNT_KINDS)}")
        name = name.strip()
        if not name:
            raise StoreError("a user needs a name")
        user_id = new_id()
        with self.db.transaction():
            self._insert(user_id, name, admin=admin, timezone=timezone, kind=kind)
            _, token = self.issue(user_id)
        return self.get(user_id), token

    def issuer(self, name: str) -> User:
        """The `issuer` account named `name` (a JWT issuer's users hang off it), made on
        first use; UserExists when an account of another kind has that name."""
        found = self._named(name)
        if found is None:
            try:
                with self.db.transaction():
                    self._insert(new_id(), name, admin=False, timezone="UTC", kind="issuer")
            except UserExists:
                pass  # made at the same moment by another request
            found = self.named(name)
        if found.kind != "issuer":
            raise UserExists(f"{name!r} is a {found.kind} account, not an issuer's")
        return found

    def _insert(self, user_id: str, name: str, *, admin: bool, timezone: str, kind: str,
                owner_id: str | None = None, external_id: str | None = None) -> None:
        try:
            self.db.execute(
                "INSERT INTO users(id, name, is_admin, kind, owner_id, external_id, timezone, "
                "created_at) VALUES ($id, $name, $admin, $kind, $owner, $external, $tz, $now)",
                {"id": user_id, "name": name, "admin": int(admin), "kind": kind,
                 "owner": owner_id, "external": external_id, "tz": timezone, "now": now_iso()},
            )
        except ConstraintViolation:
            raise UserExists(f"user {name!r} exists already") from None

    def issue(self, user_id: str) -> tuple[Token, str]:
        """A new token for the account `user_id` (its others keep working)."""
        owner = self.get(user_id)
        if owner.kind not in ACCOUNT_KINDS:
            raise StoreError(f"a {owner.kind} account is given no tokens")
        token_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO tokens(id, user_id, secret_hash, created_at) "
                "VALUES ($id, $user, $hash, $now)",
                {"id": token_id, "user": user_id, "hash": hash_secret(secret), "now": now_iso()},
            )
        return self.token(token_id), f"{token_id}.{secret}"

    def end_user(self, owner_id: str, external_id: str, name: str) -> User:
        """The end user `external_id` of account `owner_id`, created on first sight with
        the display name `name`; a concurrent first request finds the other's row."""
        found = self.find_end_user(owner_id, external_id)
        if found is not None:
            return found
        owner = self.get(owner_id)
        try:
            with self.db.transaction():
                self._insert(new_id(), name, admin=False, timezone=owner.timezone,
                             kind="end_user", owner_id=owner_id, external_id=external_id)
        except UserExists:
            pass
        return self.find_end_user(owner_id, external_id)

    def find_end_user(self, owner_id: str, external_id: str) -> User | None:
        row = self.db.execute(
            "SELECT * FROM users WHERE owner_id = $owner AND external_id = $external",
            {"owner": owner_id, "external": external_id}).fetchone()
        return None if row is None else user_of(row)

    def rename(self, user_id: str, name: str) -> User:
        """An end user's display name, as its front end now sends it."""
        with self.db.transaction():
            self.db.execute("UPDATE users SET name = $name WHERE id = $id AND kind = 'end_user'",
                            {"name": name, "id": user_id})
        return self.get(user_id)

    def get(self, user_id: str) -> User:
        row = self.db.execute("SELECT * FROM users WHERE id = $id", {"id": user_id}).fetchone()
        if row is None:
            raise NotFound(f"no user {user_id}")
        return user_of(row)

    def named(self, name: str) -> User:
        """The account (never an end user: their names are display names) named `name`."""
        found = self._named(name)
        if found is None:
            raise NotFound(f"no user named {name!r}")
        return found

    def _named(self, name: str) -> User | None:
        row = self.db.execute("SELECT * FROM users WHERE name = $name AND owner_id IS NULL",
                              {"name": name}).fetchone()
        return None if row is None else user_of(row)

    def list(self) -> list[User]:
        rows = self.db.execute("SELECT * FROM users ORDER BY name, id").fetchall()
        return [user_of(row) for row in rows]

    def revoke(self, name: str) -> User:
        """Disable the account `name`: every token of it stops working."""
        with self.db.transaction():
            cursor = self.db.execute(
                "UPDATE users SET revoked_at = $now "
                "WHERE name = $name AND owner_id IS NULL AND revoked_at IS NULL",
                {"now": now_iso(), "name": name},
            )
        if cursor.rowcount == 0:
            raise NotFound(f"no active user named {name!r}")
        return self.named(name)

    def token(self, token_id: str) -> Token:
        row = self.db.execute(f"{_TOKENS} WHERE t.id = $id", {"id": token_id}).fetchone()
        if row is None:
            raise NotFound(f"no token {token_id}")
        return record(Token, row)

    def tokens(self, *, user_id: str | None = None, kind: str | None = None,
               limit: int = 1000, offset: int = 0) -> tuple[list[Token], int]:
        """Tokens, oldest first: of one user and/or of accounts of one kind; with their
        total."""
        params = {"user": user_id, "kind": kind, "limit": limit, "offset": offset}
        where = " AND ".join(["TRUE"] + [f"{column} = ${name}" for name, column in
                                         (("user", "t.user_id"), ("kind", "u.kind"))
                                         if params[name] is not None])
        rows = self.db.execute(f"{_TOKENS} WHERE {where} ORDER BY t.created_at, t.id "
                               "LIMIT $limit OFFSET $offset", params).fetchall()
        total = self.db.scalar("SELECT count(*) FROM tokens t JOIN users u "
                               f"ON u.id = t.user_id WHERE {where}", params)
        return [record(Token, row) for row in rows], total

    def revoke_token(self, token_id: str) -> Token:
        """Revoke one token at once (again: no change); NotFound when there is none."""
        with self.db.transaction():
            self.db.execute("UPDATE tokens SET revoked_at = $now "
                            "WHERE id = $id AND revoked_at IS NULL",
                            {"now": now_iso(), "id": token_id})
        return self.token(token_id)

    def resolve(self, token: str, external_id: str | None = None) -> Resolved | None:
        """The active account owning `token` and its end user `external_id`, or None.
        Constant time in the secret."""
        token_id, sep, secret = token.partition(".")
        if not sep or not token_id or not secret:
            return None
        row = self.db.execute(_RESOLVE, {"token": token_id, "external": external_id}).fetchone()
        # Compare even when the row is missing so timing does not reveal valid ids.
        expected = row["secret_hash"] if row is not None else hash_secret("")
        if not hmac.compare_digest(expected, hash_secret(secret)) or row is None:
            return None
        return Resolved(_prefixed(row, "a_"), _prefixed(row, "e_"))

    def authenticate(self, token: str) -> User | None:
        """The active account owning `token`, or None."""
        found = self.resolve(token)
        return None if found is None else found.account
