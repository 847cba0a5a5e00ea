"""Knowledge search: keyword (full text), semantic (the vector index) and hybrid (RRF).

Keyword ranking is the one piece written per backend: FTS5 BM25 on SQLite,
tsvector `ts_rank_cd` on PostgreSQL. Both rank only the terms of `store.fts`,
so no user text reaches MATCH or tsquery syntax.
"""

from __future__ import annotations

from collections.abc import Sequence

from store import fts
from store.contract import Database
from store.knowledge._records import OF_TYPE, VISIBLE, Hit, hit_from
from store.sql import POSTGRESQL, in_list
from store.vectors import Scope, VectorIndex

RRF_K = 60
KEYWORD_OVERFETCH = 500
# {cut} is "LIMIT $over" (fast path) or "" (every match, when the fast path comes up short).
_FTS5_SQL = (
    "SELECT c.id, r.rank FROM (SELECT rowid, rank FROM knowledge_fts "
    "WHERE knowledge_fts MATCH $q ORDER BY rank, rowid {cut}) r "
    "JOIN knowledge_chunks c ON c.seq = r.rowid JOIN knowledge_entries e ON e.id = c.entry_id "
    f"WHERE {VISIBLE} AND {OF_TYPE} ORDER BY r.rank, c.seq LIMIT $limit"
)
_TSVECTOR_SQL = (
    "SELECT c.id, ts_rank_cd(f.tsv, q) AS rank "
    "FROM to_tsquery('english', $q) AS q CROSS JOIN knowledge_fts f "
    "JOIN knowledge_chunks c ON c.seq = f.rowid "
    "JOIN knowledge_entries e ON e.id = c.entry_id "
    f"WHERE f.tsv @@ q AND {VISIBLE} AND {OF_TYPE} "
    "ORDER BY rank DESC, c.seq LIMIT $limit"
)
_HIT_COLUMNS = (
    "c.id AS chunk_id, c.entry_id, c.chunk_index, c.content AS text, e.title, "
    "e.source_type, e.source_id, e.abstract, e.overview"
)

Ranking = list[tuple[str, float]]  # (chunk id, score) best first


def rrf_merge(rankings: list[list[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal Rank Fusion: score(id) = sum 1 / (k + rank), rank from 1; ties by id."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def _fts5_ranking(db: Database, query: str, params: dict) -> Ranking:
    """(chunk id, -bm25). The filtered top `limit` is taken from the best
    KEYWORD_OVERFETCH matches (ranking the FTS table alone is fast); only when too
    few of those pass the filters is every match joined and filtered."""
    expression = fts.match_query(query)
    if expression is None:
        return []
    params = {**params, "q": expression, "over": max(KEYWORD_OVERFETCH, params["limit"])}
    rows = db.execute(_FTS5_SQL.format(cut="LIMIT $over"), params).fetchall()
    if len(rows) < params["limit"]:
        rows = db.execute(_FTS5_SQL.format(cut=""), params).fetchall()
    return [(row["id"], -row["rank"]) for row in rows]


def _tsvector_ranking(db: Database, query: str, params: dict) -> Ranking:
    """(chunk id, ts_rank_cd), the query's terms OR-ed together."""
    terms = fts.query_terms(query)
    if not terms:
        return []
    rows = db.execute(_TSVECTOR_SQL, {**params, "q": " | ".join(terms)}).fetchall()
    return [(row["id"], float(row["rank"])) for row in rows]


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
        return self._hits(self._semantic_ranking(vector, viewer_id, source_type, limit))

    def hybrid(
        self, query: str, vector: Sequence[float], *, viewer_id: str,
        source_type: str | None = None, limit: int = 10,
    ) -> list[Hit]:
        """Keyword and semantic rankings merged by RRF (k=60); filters apply before the cut."""
        pool = max(limit * 5, 50)
        rankings = [
            [cid for cid, _ in self._keyword_ranking(query, viewer_id, source_type, pool)],
            [cid for cid, _ in self._semantic_ranking(vector, viewer_id, source_type, pool)],
        ]
        return self._hits(rrf_merge(rankings)[:limit])

    def _keyword_ranking(self, query, viewer_id, source_type, limit) -> Ranking:
        rank = _tsvector_ranking if self.db.dialect == POSTGRESQL else _fts5_ranking
        return rank(self.db, query, {"viewer": viewer_id, "type": source_type, "limit": limit})

    def _semantic_ranking(self, vector, viewer_id, source_type, limit) -> Ranking:
        """(chunk id, cosine similarity) best first."""
        scope = Scope(viewer_id=viewer_id, kind=source_type, where=f"{VISIBLE} AND {OF_TYPE}",
                      params={"viewer": viewer_id, "type": source_type})
        found = self._vectors.nearest(vector, k=limit, scope=scope)
        return [(chunk_id, 1.0 - distance) for chunk_id, distance, _ in found]

    def _hits(self, ranking: Ranking) -> list[Hit]:
        if not ranking:
            return []
        ids, params = in_list("id", [chunk_id for chunk_id, _ in ranking])
        rows = {row["chunk_id"]: row for row in self.db.execute(
            f"SELECT {_HIT_COLUMNS} FROM knowledge_chunks c "
            f"JOIN knowledge_entries e ON e.id = c.entry_id WHERE c.id IN {ids}", params)}
        return [hit_from(rows[cid], score) for cid, score in ranking if cid in rows]
