"""Knowledge search: keyword (full text), semantic (the vector index) and hybrid (score
fusion, store/hybrid.py, shared with the message index)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from store.contract import Database
from store.hybrid import Ranking, both_rankings, convex_merge, keyword_ranking, pool_for
from store.knowledge._records import OF_TYPE, VISIBLE, Hit, hit_from
from store.sql import in_list
from store.vectors import Scope, VectorIndex

# {matches}: the ranked keyword candidates (store/hybrid.py), keyed by knowledge_chunks.seq.
_KEYWORD_SQL = (
    "SELECT c.id, r.score FROM ({matches}) r "
    "JOIN knowledge_chunks c ON c.seq = r.rowid JOIN knowledge_entries e ON e.id = c.entry_id "
    f"WHERE {VISIBLE} AND {OF_TYPE} ORDER BY r.score DESC, c.seq LIMIT $limit"
)
_HIT_COLUMNS = (
    "c.id AS chunk_id, c.entry_id, c.chunk_index, c.content AS text, e.title, "
    "e.source_type, e.source_id, e.abstract, e.overview"
)


class Search:
    """The search half of `Knowledge`."""

    db: Database
    _vectors: VectorIndex

    def keyword(
        self, query: str, *, viewer_id: str, source_type: str | None = None, limit: int = 10
    ) -> list[Hit]:
        """Full-text ranking over the caller's and shared chunks; any query text is safe."""
        return self._hits(self._keyword_ranking(query, viewer_id, source_type, limit))

    def semantic(
        self, vector: Sequence[float], *, viewer_id: str, source_type: str | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        """Nearest chunks to `vector` (cosine); VectorUnavailable when vectors cannot run."""
        return self._settled(lambda: self._semantic_ranking(vector, viewer_id, source_type, limit))

    def hybrid(
        self, query: str, vector: Sequence[float], *, viewer_id: str,
        source_type: str | None = None, limit: int = 10, keyword: Ranking | None = None,
    ) -> list[Hit]:
        """Keyword and semantic rankings merged by `convex_merge`; filters apply before the
        cut. `keyword`: the keyword half, taken ahead by `hybrid_keyword` with the same
        arguments (a chat turn does, while its query is embedded)."""
        pool = pool_for(limit)
        ahead = [keyword] if keyword is not None else []

        def keyword_half() -> Ranking:  # fresh when `_settled` ranks again
            return ahead.pop() if ahead else self._keyword_ranking(query, viewer_id,
                                                                   source_type, pool)

        def merged() -> Ranking:
            rankings = both_rankings(
                self.db, keyword_half,
                lambda: self._semantic_ranking(vector, viewer_id, source_type, pool))
            return convex_merge(rankings)[:limit]

        return self._settled(merged)

    def hybrid_keyword(self, query: str, *, viewer_id: str, source_type: str | None = None,
                       limit: int = 10) -> Ranking:
        """The keyword ranking `hybrid` with these arguments merges, for its `keyword`."""
        return self._keyword_ranking(query, viewer_id, source_type, pool_for(limit))

    def _keyword_ranking(self, query, viewer_id, source_type, limit) -> Ranking:
        return keyword_ranking(
            self.db, query, {"viewer": viewer_id, "type": source_type, "limit": limit},
            table="knowledge_fts", sql=_KEYWORD_SQL)

    def _semantic_ranking(self, vector, viewer_id, source_type, limit) -> Ranking:
        """(chunk id, cosine similarity) best first."""
        scope = Scope(viewer_id=viewer_id, kind=source_type, where=f"{VISIBLE} AND {OF_TYPE}",
                      params={"viewer": viewer_id, "type": source_type})
        found = self._vectors.nearest(vector, k=limit, scope=scope)
        return [(chunk_id, 1.0 - distance) for chunk_id, distance, _ in found]

    def _settled(self, ranking: Callable[[], Ranking], tries: int = 3) -> list[Hit]:
        """The hits of `ranking()`, ranked again when some of its chunks were deleted
        before their rows were read: the in-memory index took its view before the delete,
        the next view has it, so the caller still gets `limit` hits when there are."""
        for _ in range(tries):
            ranked = ranking()
            hits = self._hits(ranked)
            if len(hits) == len(ranked):
                break
        return hits

    def _hits(self, ranking: Ranking) -> list[Hit]:
        if not ranking:
            return []
        ids, params = in_list("id", [chunk_id for chunk_id, _ in ranking])
        rows = {row["chunk_id"]: row for row in self.db.execute(
            f"SELECT {_HIT_COLUMNS} FROM knowledge_chunks c "
            f"JOIN knowledge_entries e ON e.id = c.entry_id WHERE c.id IN {ids}", params)}
        return [hit_from(rows[cid], score) for cid, score in ranking if cid in rows]
