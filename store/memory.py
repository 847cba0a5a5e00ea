"""User memory: CRUD with soft delete, a per-user version, and KNN recall.

`user_memory` is the source of truth; `user_memory_vec` is a derived index. A
write replaces the memory's vector row in the same transaction (sqlite-vec 0.1.9
has no upsert: delete + insert); a soft delete drops it at once, so a tombstone
is never recalled. A row left without a vector (embeddings or sqlite-vec were
down) is found by `unembedded` for backfill and `chatsvc reindex`.
Injection order and budgets are not decided here but in context/memory.py.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from store import _uservec
from store._db import Connection, Database
from store._errors import NotFound
from store._uservec import UserVectors
from store.clock import new_id, now_iso
from store.contract import EmbedJob

MEMORY_TYPES = ("preference", "instruction", "profile", "note")
SCOPES = ("global", "project")
ORIGINS = ("manual", "learned")
KNN_MAX_K = 4096  # sqlite-vec 0.1.9's limit for k, kept for the in-memory index

_COLUMNS = (
    "m.id, m.user_id, m.type, m.scope, m.project_id, m.origin, m.content, "
    "m.created_at, m.updated_at"
)
# Memories that apply in a project: every global one plus that project's own.
_APPLIES = "(m.scope = 'global' OR m.project_id = ?)"


@dataclass(frozen=True)
class Memory:
    id: str
    user_id: str
    type: str
    scope: str
    project_id: str | None
    origin: str
    content: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class MemorySnapshot:
    """The memories that apply to (user, project) and the version they were read at."""

    memories: list[Memory]
    version: int


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _memories(conn: Connection, sql: str, params: tuple) -> list[Memory]:
    # A plain tuple factory: building sqlite3.Row objects first doubles the cost.
    cursor = conn.cursor()
    cursor.row_factory = lambda _, row: Memory(*row)
    return cursor.execute(sql, params).fetchall()


def _bump_version(conn: Connection, user_id: str) -> None:
    conn.execute(
        "INSERT INTO user_memory_versions(user_id, version) VALUES (?, 1) "
        "ON CONFLICT(user_id) DO UPDATE SET version = user_memory_versions.version + 1",
        (user_id,),
    )


def _version(conn: Connection, user_id: str) -> int:
    row = conn.execute(
        "SELECT version FROM user_memory_versions WHERE user_id = ?", (user_id,)
    ).fetchone()
    return 0 if row is None else row[0]


class Memories:
    """One user's memories; every method takes the owner, so a foreign id is NotFound."""

    table = "user_memory_vec"

    def __init__(self, db: Database) -> None:
        self.db = db
        self._vectors = UserVectors(db, self.table, "memory_id")

    # -- writes ------------------------------------------------------------------------

    def create(
        self,
        user_id: str,
        *,
        type: str,
        scope: str,
        content: str,
        project_id: str | None = None,
        origin: str = "manual",
        embedding: Sequence[float] | None = None,
    ) -> Memory:
        """Insert a memory; with `embedding` (of `content`) its vector row too."""
        memory_id, now, digest = new_id(), now_iso(), content_hash(content)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO user_memory(id, user_id, type, scope, project_id, origin, content, "
                "content_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (memory_id, user_id, type, scope, project_id, origin, content, digest, now, now),
            )
            if embedding is not None:
                self._vectors.put(conn, user_id, [(memory_id, embedding, digest)])
            _bump_version(conn, user_id)
        return self.get(user_id, memory_id)

    def update(
        self,
        user_id: str,
        memory_id: str,
        *,
        type: str,
        scope: str,
        project_id: str | None,
        content: str,
        embedding: Sequence[float] | None = None,
    ) -> Memory:
        """Replace a live memory's fields. New content without `embedding` drops the
        vector row (left for backfill) rather than letting it match the old text."""
        digest = content_hash(content)
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT content_hash FROM user_memory "
                "WHERE id = ? AND user_id = ? AND deleted_at IS NULL",
                (memory_id, user_id),
            ).fetchone()
            if row is None:
                raise NotFound(f"no memory {memory_id}")
            conn.execute(
                "UPDATE user_memory SET type = ?, scope = ?, project_id = ?, content = ?, "
                "content_hash = ?, updated_at = ? WHERE id = ?",
                (type, scope, project_id, content, digest, now_iso(), memory_id),
            )
            if embedding is not None:
                self._vectors.put(conn, user_id, [(memory_id, embedding, digest)])
            elif row["content_hash"] != digest:
                self._vectors.drop(conn, memory_id, user_id)
            _bump_version(conn, user_id)
        return self.get(user_id, memory_id)

    def delete(self, user_id: str, memory_id: str) -> None:
        """Soft delete: the row stays as a tombstone, its vector goes at once."""
        now = now_iso()
        with self.db.transaction() as conn:
            cursor = conn.execute(
                "UPDATE user_memory SET deleted_at = ?, updated_at = ? "
                "WHERE id = ? AND user_id = ? AND deleted_at IS NULL",
                (now, now, memory_id, user_id),
            )
            if cursor.rowcount == 0:
                raise NotFound(f"no memory {memory_id}")
            self._vectors.drop(conn, memory_id, user_id)
            _bump_version(conn, user_id)

    # -- reads -------------------------------------------------------------------------

    def get(self, user_id: str, memory_id: str) -> Memory:
        found = _memories(
            self.db.connection(),
            f"SELECT {_COLUMNS} FROM user_memory m "
            "WHERE m.id = ? AND m.user_id = ? AND m.deleted_at IS NULL",
            (memory_id, user_id),
        )
        if not found:
            raise NotFound(f"no memory {memory_id}")
        return found[0]

    def list(self, user_id: str, *, project_id: str | None = None) -> list[Memory]:
        """Live memories: all of them, or those that apply in `project_id`."""
        sql = f"SELECT {_COLUMNS} FROM user_memory m WHERE m.user_id = ? AND m.deleted_at IS NULL"
        params: tuple = (user_id,)
        if project_id is not None:
            sql += f" AND {_APPLIES}"
            params += (project_id,)
        return _memories(self.db.connection(), sql + " ORDER BY m.id", params)

    def snapshot(self, user_id: str, project_id: str | None) -> MemorySnapshot:
        """What applies in `project_id` (global only when None) plus the version,
        read in one transaction so the two agree."""
        conn = self.db.connection()
        conn.execute("BEGIN")
        try:
            memories = _memories(
                conn,
                f"SELECT {_COLUMNS} FROM user_memory m "
                f"WHERE m.user_id = ? AND m.deleted_at IS NULL AND {_APPLIES} ORDER BY m.id",
                (user_id, project_id),
            )
            version = _version(conn, user_id)
        finally:
            conn.execute("COMMIT")
        return MemorySnapshot(memories, version)

    def version(self, user_id: str) -> int:
        """Changes with every create, update and delete of the user's memory."""
        return _version(self.db.connection(), user_id)

    def recall(
        self, user_id: str, vector: Sequence[float], *, k: int, project_id: str | None
    ) -> list[tuple[Memory, float]]:
        """The user's `k` nearest vectors (cosine), kept when their memory is live,
        applies in `project_id` and still has the content the vector was made from.
        Filters apply after top-k (vec0), so fewer than `k` may come back."""
        nearest = self._vectors.nearest(user_id, vector, max(1, min(k, KNN_MAX_K)))
        cursor = self.db.connection().cursor()
        cursor.row_factory = lambda _, row: (Memory(*row[:-1]), float(row[-1]))
        return cursor.execute(
            # A vector made from other content (left while vectors were off) never matches.
            f"WITH knn AS ({_uservec.KNN_ROWS}) SELECT {_COLUMNS}, knn.distance FROM knn "
            "JOIN user_memory m ON m.id = knn.id AND m.content_hash = knn.content_hash "
            "WHERE m.user_id = :user AND m.deleted_at IS NULL "
            "AND (m.scope = 'global' OR m.project_id = :project) ORDER BY knn.distance, m.id",
            {"knn": json.dumps(nearest), "user": user_id, "project": project_id},
        ).fetchall()

    # -- Reindexable -------------------------------------------------------------------

    def unembedded(self, *, limit: int) -> list[EmbedJob]:
        rows = self.db.require_vectors().execute(
            "SELECT m.id, m.content, m.content_hash FROM user_memory m "
            "LEFT JOIN user_memory_vec v ON v.memory_id = m.id "
            "WHERE m.deleted_at IS NULL "
            "AND (v.memory_id IS NULL OR v.content_hash != m.content_hash) "
            "ORDER BY m.id LIMIT ?",
            (limit,),
        ).fetchall()
        return [EmbedJob(row["id"], row["content"], row["content_hash"]) for row in rows]

    def save_embeddings(self, items: list[tuple[EmbedJob, list[float]]]) -> None:
        """Store vectors for jobs whose memory is still live with the same content."""
        self.db.require_vectors()
        with self.db.transaction() as conn:
            by_user: dict[str, list] = {}
            for job, vector in items:
                row = conn.execute(
                    "SELECT user_id FROM user_memory "
                    "WHERE id = ? AND content_hash = ? AND deleted_at IS NULL",
                    (job.row_id, job.content_hash),
                ).fetchone()
                if row is not None:
                    by_user.setdefault(row["user_id"], []).append(
                        (job.row_id, vector, job.content_hash))
            for user_id, rows in by_user.items():
                self._vectors.put(conn, user_id, rows)
