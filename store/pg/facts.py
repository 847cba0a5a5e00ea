"""Facts on PostgreSQL: `store.facts.Facts` with pgvector KNN and PostgreSQL's greatest()."""

from __future__ import annotations

from store.clock import now_iso
from store.contract import EmbedJob
from store.facts import _COLUMNS, _LIVE, FactHit, Facts, _row_to_fact
from store.pg._vector import PgUserVectors, vector

_UPSERT = "INSERT INTO fact_vec(fact_id, user_id, embedding, content_hash)"
_ON_CONFLICT = (
    "ON CONFLICT (fact_id) DO UPDATE SET user_id = excluded.user_id, "
    "embedding = excluded.embedding, content_hash = excluded.content_hash"
)


class PgFacts(Facts):
    def __init__(self, db) -> None:
        super().__init__(db)
        self._vectors = PgUserVectors(db, self.table, "fact_id")

    def recent(self, user_id: str, *, limit: int = 100):
        rows = self.db.connection().execute(
            f"SELECT * FROM (SELECT {_COLUMNS} FROM facts f WHERE f.user_id = :user AND {_LIVE})"
            " r ORDER BY greatest(r.updated_at, coalesce(r.last_extracted_at, '')) DESC, r.id "
            "LIMIT :limit",
            {"user": user_id, "now": now_iso(), "limit": limit},
        ).fetchall()
        return [_row_to_fact(row) for row in rows]

    def search_by_vector(
        self, user_id: str, query: list[float], *, limit: int = 10, max_distance: float = 1.0
    ) -> list[FactHit]:
        """HNSW KNN with the user and liveness filters inside the scan (no shortfall)."""
        conn = self.db.require_vectors()
        rows = conn.bound_cursor().execute(
            "WITH knn AS MATERIALIZED (SELECT v.fact_id, v.embedding <=> :vec AS distance"
            " FROM fact_vec v JOIN facts f ON f.id = v.fact_id "
            f"WHERE v.user_id = :user AND f.user_id = :user AND {_LIVE} "
            "ORDER BY distance LIMIT :limit) "
            f"SELECT {_COLUMNS}, knn.distance FROM knn JOIN facts f ON f.id = knn.fact_id "
            "WHERE knn.distance <= :max ORDER BY knn.distance, f.id",
            {"vec": vector(query, self.db.embed_dim), "user": user_id, "max": max_distance,
             "now": now_iso(), "limit": max(1, limit)},
        ).fetchall()
        return [FactHit(_row_to_fact(row), float(row["distance"])) for row in rows]

    def save_embeddings(self, items: list[tuple[EmbedJob, list[float]]]) -> None:
        """Vectors for jobs whose fact still has that text: one pipelined batch."""
        self.db.require_vectors()
        with self.db.transaction() as conn:
            conn.bound_cursor().executemany(
                f"{_UPSERT} SELECT id, user_id, ?, content_hash FROM facts "
                f"WHERE id = ? AND content_hash = ? {_ON_CONFLICT}",
                [(vector(v, self.db.embed_dim), job.row_id, job.content_hash)
                 for job, v in items],
            )
