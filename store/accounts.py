"""One user's account across every domain: the ids an export walks, and deleting it all.

Deleting is one transaction. Plain rows go with the user's row: every user-keyed table
declares `REFERENCES users(id) ON DELETE CASCADE` in both dialects (posts keep
`ON DELETE SET NULL`: published content stays, unattributed). What no foreign key
reaches is each domain's `forget_user` part: vector rows (sqlite-vec tables have no
foreign keys), in-memory copies and their generation keys, full-text rows. A new domain
with such data implements `Forgets` and joins the parts `stores_for` passes here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from store._errors import NotFound
from store.clock import now_iso
from store.contract import Database
from store.facts import LIVE
from store.users import User, user_of


@dataclass(frozen=True)
class Summary:
    """A user as an admin lists them."""
    user: User
    messages: int
    facts: int


class Forgets(Protocol):
    def forget_user(self, user_id: str) -> None:
        """Delete what the foreign keys do not reach, inside the caller's transaction."""
        ...


class Accounts:
    def __init__(self, db: Database, parts: Sequence[Forgets]) -> None:
        self.db = db
        self.parts = tuple(parts)

    def conversation_ids(self, user_id: str) -> list[str]:
        """The user's conversations, oldest first (an export's order)."""
        rows = self.db.execute(
            "SELECT id FROM conversations WHERE user_id = $user ORDER BY created_at, id",
            {"user": user_id}).fetchall()
        return [row["id"] for row in rows]

    def knowledge_ids(self, user_id: str) -> list[str]:
        """The user's own knowledge entries (never shared ones), oldest first."""
        rows = self.db.execute(
            "SELECT id FROM knowledge_entries WHERE owner_id = $user ORDER BY created_at, id",
            {"user": user_id}).fetchall()
        return [row["id"] for row in rows]

    def page(self, *, limit: int, offset: int) -> tuple[list[Summary], int]:
        """Every user, oldest first, with their message and live-fact counts; the total."""
        rows = self.db.execute(
            "SELECT u.*, (SELECT count(*) FROM conversations c JOIN messages m "
            "ON m.conversation_id = c.id WHERE c.user_id = u.id) AS message_count, "
            f"(SELECT count(*) FROM facts f WHERE f.user_id = u.id AND {LIVE}) AS fact_count "
            "FROM users u ORDER BY u.created_at, u.id LIMIT $limit OFFSET $offset",
            {"limit": limit, "offset": offset, "now": now_iso()}).fetchall()
        found = [Summary(user_of(row), row["message_count"], row["fact_count"]) for row in rows]
        return found, self.db.scalar("SELECT count(*) FROM users")

    def delete(self, user_id: str) -> list[str]:
        """The user and everything they own, vectors included, and so every end user of
        theirs (a service account's, an issuer's); NotFound when absent. Returns the
        deleted users' ids (the files kept outside the database go by them)."""
        deleted = []
        with self.db.transaction():
            end_users = self.db.execute("SELECT id FROM users WHERE owner_id = $id",
                                        {"id": user_id}).fetchall()
            for row in end_users:
                deleted += self.delete(row["id"])
            for part in self.parts:
                part.forget_user(user_id)
            cursor = self.db.execute("DELETE FROM users WHERE id = $id", {"id": user_id})
            if cursor.rowcount == 0:
                raise NotFound(f"no user {user_id}")
        return [*deleted, user_id]
