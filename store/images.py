"""The images of user messages: by reference (an https URL) or by the content hash of a
file the caller keeps (chatsvc.images.ImageFiles); no bytes in the database.

A row goes with its message, conversation or user (foreign keys, both dialects).
Every query is scoped by user id: another user's image is NotFound like a missing one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from store._errors import NotFound
from store.clock import new_id
from store.contract import Database
from store.sql import record


@dataclass(frozen=True)
class ImageIn:
    """One image of a message to store: `url` or `sha256` (a file's), not both."""

    url: str | None = None
    sha256: str | None = None
    mime: str | None = None
    size: int | None = None
    detail: str | None = None


@dataclass(frozen=True)
class StoredImage:
    id: str
    message_id: str
    user_id: str
    position: int
    url: str | None
    sha256: str | None
    mime: str | None
    size: int | None
    detail: str | None
    created_at: str


def add_images(db: Database, user_id: str, message_id: str, images: Sequence[ImageIn],
               now: str) -> None:
    """Store `images` of a message, in order, inside the caller's transaction."""
    for position, image in enumerate(images):
        db.execute(
            "INSERT INTO message_images(id, message_id, user_id, position, url, sha256, mime, "
            "size, detail, created_at) VALUES ($id, $message, $user, $position, $url, $sha, "
            "$mime, $size, $detail, $now)",
            {"id": new_id(), "message": message_id, "user": user_id, "position": position,
             "url": image.url, "sha": image.sha256, "mime": image.mime, "size": image.size,
             "detail": image.detail, "now": now},
        )


class Images:
    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, user_id: str, image_id: str) -> StoredImage:
        row = self.db.execute(
            "SELECT * FROM message_images WHERE id = $id AND user_id = $user",
            {"id": image_id, "user": user_id},
        ).fetchone()
        if row is None:
            raise NotFound(f"no image {image_id}")
        return record(StoredImage, row)

    def of_conversation(self, user_id: str, conversation_id: str
                        ) -> dict[str, list[StoredImage]]:
        """Each message's images, in order, by message id (messages without: absent)."""
        rows = self.db.execute(
            "SELECT i.* FROM message_images i JOIN messages m ON m.id = i.message_id "
            "WHERE m.conversation_id = $conversation AND m.user_id = $user "
            "AND i.user_id = $user ORDER BY i.message_id, i.position",
            {"conversation": conversation_id, "user": user_id},
        ).fetchall()
        found: dict[str, list[StoredImage]] = {}
        for row in rows:
            found.setdefault(row["message_id"], []).append(record(StoredImage, row))
        return found

    def file_hashes(self, user_id: str) -> set[str]:
        """The content hashes of the files the user's images still name."""
        rows = self.db.execute(
            "SELECT DISTINCT sha256 FROM message_images WHERE user_id = $user "
            "AND sha256 IS NOT NULL", {"user": user_id},
        ).fetchall()
        return {row["sha256"] for row in rows}
