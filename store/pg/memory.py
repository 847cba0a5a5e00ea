"""User memory on PostgreSQL: `store.memory.Memories` with pgvector KNN recall."""

from __future__ import annotations

from collections.abc import Sequence

from store.memory import _APPLIES, _COLUMNS, Memories, Memory
from store.pg._vector import PgUserVectors, vector


class PgMemories(Memories):
    def __init__(self, db) -> None:
        super().__init__(db)
        self._vectors = PgUserVectors(db, self.table, "memory_id")

    def recall(
        self, user_id: str, query: Sequence[float], *, k: int, project_id: str | None
    ) -> list[tuple[Memory, float]]:
        """The `k` nearest live memories that apply in `project_id`; unlike vec0 the
        filters run inside the HNSW scan, so `k` come back whenever `k` exist."""
        conn = self.db.require_vectors()
        cursor = conn.bound_cursor()
        cursor.row_factory = lambda _, row: (Memory(*row[:-1]), float(row[-1]))
        return cursor.execute(
            "WITH knn AS MATERIALIZED (SELECT v.memory_id, v.embedding <=> ? AS distance"
            " FROM user_memory_vec v JOIN user_memory m "
            "ON m.id = v.memory_id AND m.content_hash = v.content_hash "
            f"WHERE v.user_id = ? AND m.user_id = ? AND m.deleted_at IS NULL AND {_APPLIES} "
            "ORDER BY distance LIMIT ?) "
            f"SELECT {_COLUMNS}, knn.distance FROM knn JOIN user_memory m ON m.id = knn.memory_id"
            " ORDER BY knn.distance, m.id",
            (vector(query, self.db.embed_dim), user_id, user_id, project_id, max(1, k)),
        ).fetchall()
