"""Knowledge on PostgreSQL: `store.knowledge.Knowledge` with tsvector keyword ranking and
pgvector semantic ranking; keyword/semantic/hybrid (the RRF merge) are inherited."""

from __future__ import annotations

from store import fts
from store.knowledge import _VISIBLE, Knowledge
from store.pg._vector import vector

# Typed: the vector queries bind server-side, where a bare `$1 IS NULL` has no type.
_OF_TYPE = "(:type::text IS NULL OR e.source_type = :type)"


class PgKnowledge(Knowledge):
    def _keyword_ranking(self, query, viewer_id, source_type, limit) -> list[tuple[str, float]]:
        """(chunk id, ts_rank_cd) best first over the caller's and shared chunks. The
        query is reduced to terms (words, CJK bigrams) OR-ed together, so no user text
        reaches tsquery syntax."""
        terms = fts.query_terms(query)
        if not terms:
            return []
        rows = self.db.connection().execute(
            "SELECT c.id, ts_rank_cd(f.tsv, q) AS rank "
            "FROM to_tsquery('english', :q) AS q CROSS JOIN knowledge_fts f "
            "JOIN knowledge_chunks c ON c.seq = f.rowid "
            "JOIN knowledge_entries e ON e.id = c.entry_id "
            f"WHERE f.tsv @@ q AND {_VISIBLE} AND {_OF_TYPE} "
            "ORDER BY rank DESC, c.seq LIMIT :limit",
            {"q": " | ".join(terms), "viewer": viewer_id, "type": source_type, "limit": limit},
        ).fetchall()
        return [(row[0], float(row[1])) for row in rows]

    def _semantic_ranking(self, query, viewer_id, source_type, limit) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity) best first: HNSW KNN with the visibility and
        type filters inside the scan."""
        conn = self.db.require_vectors()
        rows = conn.bound_cursor().execute(
            "SELECT v.chunk_id, v.embedding <=> :vec AS distance FROM chunk_vec v "
            "JOIN knowledge_chunks c ON c.id = v.chunk_id "
            f"JOIN knowledge_entries e ON e.id = c.entry_id WHERE {_VISIBLE} AND {_OF_TYPE} "
            "ORDER BY distance LIMIT :limit",
            {"vec": vector(query, self.db.embed_dim), "viewer": viewer_id,
             "type": source_type, "limit": max(1, limit)},
        ).fetchall()
        # relaxed_order scans may return near-ties out of order: sort exactly.
        return sorted(((row[0], 1.0 - float(row[1])) for row in rows), key=lambda r: -r[1])

    def _changed(self, conn, removed, rows) -> None:
        """No in-memory snapshot to keep current: every search reads the index."""

    def save_embeddings(self, items) -> None:
        self.db.require_vectors()
        with self.db.transaction() as conn:
            # The chunk may have been replaced while it was being embedded: then no row.
            conn.bound_cursor().executemany(
                "INSERT INTO chunk_vec(chunk_id, embedding, content_hash) "
                "SELECT id, ?, ? FROM knowledge_chunks WHERE id = ? ON CONFLICT (chunk_id) "
                "DO UPDATE SET embedding = excluded.embedding, "
                "content_hash = excluded.content_hash",
                [(vector(v, self.db.embed_dim), job.content_hash, job.row_id)
                 for job, v in items],
            )
