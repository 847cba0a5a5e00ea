"""Blog posts. Publishing and indexing into the knowledge base is the caller's job
(chatsvc.knowledge), since it needs the embedder; this module is plain rows."""

from __future__ import annotations

from dataclasses import dataclass

from store._errors import NotFound
from store.clock import new_id, now_iso
from store.contract import Database
from store.sql import record

_EDITABLE = ("title", "content", "excerpt", "published")


@dataclass(frozen=True)
class Post:
    id: str
    author_id: str | None
    title: str
    content: str
    excerpt: str
    published: bool
    created_at: str
    updated_at: str
    published_at: str | None


def _post(row) -> Post:
    return record(Post, row, published=bool(row["published"]))

class Posts:
    def __init__(self, db: Database) -> None:
        self.db = db

    def create(
        self, *, author_id: str | None, title: str, content: str, excerpt: str, published: bool
    ) -> Post:
        post_id, now = new_id(), now_iso()
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO posts(id, author_id, title, content, excerpt, published, "
                "created_at, updated_at, published_at) VALUES ($id, $author, $title, "
                "$content, $excerpt, $published, $now, $now, $published_at)",
                {"id": post_id, "author": author_id, "title": title, "content": content,
                 "excerpt": excerpt, "published": int(published), "now": now,
                 "published_at": now if published else None},
            )
        return self.get(post_id)

    def get(self, post_id: str, *, include_drafts: bool = True) -> Post:
        row = self.db.execute("SELECT * FROM posts WHERE id = $id", {"id": post_id}).fetchone()
        if row is None or not (include_drafts or row["published"]):
            raise NotFound(f"no post {post_id}")
        return _post(row)

    def list(self, *, limit: int = 20, include_drafts: bool = False) -> list[Post]:
        rows = self.db.execute(
            "SELECT * FROM posts WHERE published = 1 OR $drafts = 1 "
            "ORDER BY created_at DESC, id LIMIT $limit",
            {"drafts": int(include_drafts), "limit": limit},
        ).fetchall()
        return [_post(row) for row in rows]

    def update(self, post_id: str, **changes: object) -> Post:
        """Change any of title, content, excerpt, published; publishing stamps published_at."""
        unknown = set(changes) - set(_EDITABLE)
        if unknown:
            raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
        with self.db.transaction():
            before = self.get(post_id)
            values = {**{k: getattr(before, k) for k in _EDITABLE}, **changes}
            published_at = before.published_at
            if values["published"] and not before.published:
                published_at = now_iso()
            self.db.execute(
                "UPDATE posts SET title = $title, content = $content, excerpt = $excerpt, "
                "published = $published, published_at = $published_at, updated_at = $now "
                "WHERE id = $id",
                {"title": values["title"], "content": values["content"],
                 "excerpt": values["excerpt"], "published": int(bool(values["published"])),
                 "published_at": published_at, "now": now_iso(), "id": post_id},
            )
        return self.get(post_id)

    def delete(self, post_id: str) -> Post:
        with self.db.transaction():
            post = self.get(post_id)
            self.db.execute("DELETE FROM posts WHERE id = $id", {"id": post_id})
        return post

    def recent_published(self, limit: int = 3) -> list[Post]:
        """The newest published posts (title + excerpt ground the chat fallback)."""
        rows = self.db.execute(
            "SELECT * FROM posts WHERE published = 1 "
            "ORDER BY published_at DESC, created_at DESC, id LIMIT $limit",
            {"limit": limit},
        ).fetchall()
        return [_post(row) for row in rows]
