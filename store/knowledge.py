"""Knowledge entries, their chunks, full-text and vector search.

An entry with `owner_id` None is shared (CLI-indexed files, published posts);
otherwise only its owner sees it. Entries are keyed by (owner, source_type,
source_id) when a source id is given, else by content hash, so indexing the same
thing twice is a no-op and a changed source replaces its entry.

Writes go: `save` (entry + chunks + full-text rows, one transaction) -> the
caller embeds the returned `EmbedJob`s -> `save_embeddings`. Chunks without a
vector are still found by keyword search and picked up by `unembedded` later.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field

import numpy as np

from store import _meta, _vecindex, fts
from store._db import Database
from store._errors import NotFound
from store.clock import new_id, now_iso
from store.contract import EmbedJob

RRF_K = 60
GENERATION_KEY = "knowledge_vec_generation"
TITLE_IN_EMBEDDING = 100  # chars of the title embedded with each chunk


@dataclass(frozen=True)
class ChunkIn:
    text: str
    language: str


@dataclass(frozen=True)
class Entry:
    id: str
    owner_id: str | None
    title: str
    source_type: str
    source_id: str | None
    content: str
    abstract: str
    overview: str
    tiers_by: str
    metadata: dict
    content_hash: str
    created_at: str
    updated_at: str
    chunks: int


@dataclass(frozen=True)
class Hit:
    chunk_id: str
    entry_id: str
    title: str
    source_type: str
    source_id: str | None
    chunk_index: int
    abstract: str
    overview: str
    text: str
    score: float


@dataclass(frozen=True)
class Saved:
    entry: Entry
    status: str  # created | replaced | unchanged
    jobs: list[EmbedJob] = field(default_factory=list)


def content_hash(title: str, content: str) -> str:
    return hashlib.sha256(f"{title}\n\x00{content}".encode()).hexdigest()


def embed_text(title: str, chunk: str) -> str:
    """What gets embedded for a chunk: its entry's title gives it topic context."""
    return f"{title[:TITLE_IN_EMBEDDING]}\n{chunk}"


def rrf_merge(rankings: list[list[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal Rank Fusion: score(id) = sum 1 / (k + rank), rank from 1; ties by id."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


_ENTRY_COLUMNS = (
    "e.*, (SELECT count(*) FROM knowledge_chunks c WHERE c.entry_id = e.id) AS chunk_count"
)
_VISIBLE = "(e.owner_id IS NULL OR e.owner_id = :viewer)"
KEYWORD_OVERFETCH = 500
# {cut} is "LIMIT :over" (fast path) or "" (every match, when the fast path comes up short).
_KEYWORD_SQL = (
    "SELECT c.id, r.rank FROM (SELECT rowid, rank FROM knowledge_fts "
    "WHERE knowledge_fts MATCH :q ORDER BY rank, rowid {cut}) r "
    "JOIN knowledge_chunks c ON c.seq = r.rowid JOIN knowledge_entries e ON e.id = c.entry_id "
    "WHERE (e.owner_id IS NULL OR e.owner_id = :viewer) "
    "AND (:type IS NULL OR e.source_type = :type) ORDER BY r.rank, c.seq LIMIT :limit"
)
_HIT_COLUMNS = (
    "c.id AS chunk_id, c.entry_id, c.chunk_index, c.content AS text, e.title, "
    "e.source_type, e.source_id, e.abstract, e.overview"
)


def _entry(row) -> Entry:
    return Entry(
        id=row["id"], owner_id=row["owner_id"], title=row["title"],
        source_type=row["source_type"], source_id=row["source_id"], content=row["content"],
        abstract=row["abstract"], overview=row["overview"], tiers_by=row["tiers_by"],
        metadata=json.loads(row["metadata"]), content_hash=row["content_hash"],
        created_at=row["created_at"], updated_at=row["updated_at"], chunks=row["chunk_count"],
    )


def _hit(row, score: float) -> Hit:
    return Hit(
        chunk_id=row["chunk_id"], entry_id=row["entry_id"], title=row["title"],
        source_type=row["source_type"], source_id=row["source_id"],
        chunk_index=row["chunk_index"], abstract=row["abstract"], overview=row["overview"],
        text=row["text"], score=score,
    )


class Knowledge:
    table = "chunk_vec"

    def __init__(self, db: Database, *, rescore: int = 400) -> None:
        self.db = db
        self.rescore = rescore
        self._snapshot: _vecindex.Snapshot | None = None
        self._snapshot_lock = threading.Lock()

    # -- writes ------------------------------------------------------------------------

    def save(
        self,
        *,
        owner_id: str | None,
        title: str,
        content: str,
        source_type: str,
        chunks: list[ChunkIn],
        source_id: str | None = None,
        metadata: dict | None = None,
        abstract: str = "",
        overview: str = "",
    ) -> Saved:
        """Create the entry, replace the one with the same source, or keep an identical one."""
        digest = content_hash(title, content)
        now = now_iso()
        with self.db.transaction() as conn:
            existing = self._existing(conn, owner_id, source_type, source_id, digest)
            if existing is not None and existing["content_hash"] == digest:
                return Saved(self._get(conn, existing["id"]), "unchanged")
            values = dict(
                owner=owner_id, title=title, type=source_type, source=source_id, content=content,
                abstract=abstract, overview=overview, metadata=json.dumps(metadata or {}),
                hash=digest, now=now,
            )
            if existing is None:
                entry_id, status = self._insert_entry(conn, values), "created"
            else:
                entry_id, status = existing["id"], "replaced"
                self._delete_chunks(conn, entry_id)
                self._update_entry(conn, entry_id, values)
            jobs = self._insert_chunks(conn, entry_id, title, chunks)
            return Saved(self._get(conn, entry_id), status, jobs)

    @staticmethod
    def _insert_entry(conn, values: dict) -> str:
        entry_id = new_id()
        conn.execute(
            "INSERT INTO knowledge_entries(id, owner_id, title, source_type, source_id, "
            "content, abstract, overview, metadata, content_hash, created_at, updated_at)"
            " VALUES (:id, :owner, :title, :type, :source, :content, :abstract, "
            ":overview, :metadata, :hash, :now, :now)",
            {"id": entry_id, **values},
        )
        return entry_id

    @staticmethod
    def _update_entry(conn, entry_id: str, values: dict) -> None:
        conn.execute(
            "UPDATE knowledge_entries SET title = :title, content = :content, "
            "abstract = :abstract, overview = :overview, tiers_by = 'extractive', "
            "metadata = :metadata, content_hash = :hash, updated_at = :now WHERE id = :id",
            {"id": entry_id, **values},
        )

    def _existing(self, conn, owner_id, source_type, source_id, digest):
        if source_id is not None:
            return conn.execute(
                "SELECT id, content_hash FROM knowledge_entries WHERE ifnull(owner_id, '') = ? "
                "AND source_type = ? AND source_id = ?",
                (owner_id or "", source_type, source_id),
            ).fetchone()
        return conn.execute(
            "SELECT id, content_hash FROM knowledge_entries WHERE ifnull(owner_id, '') = ? "
            "AND content_hash = ? AND source_id IS NULL AND source_type = ?",
            (owner_id or "", digest, source_type),
        ).fetchone()

    def _insert_chunks(self, conn, entry_id: str, title: str, chunks: list[ChunkIn]):
        jobs = []
        for index, chunk in enumerate(chunks):
            chunk_id = new_id()
            digest = hashlib.sha256(chunk.text.encode()).hexdigest()
            cursor = conn.execute(
                "INSERT INTO knowledge_chunks(id, entry_id, chunk_index, content, language, "
                "content_hash) VALUES (?, ?, ?, ?, ?, ?)",
                (chunk_id, entry_id, index, chunk.text, chunk.language, digest),
            )
            conn.execute(
                "INSERT INTO knowledge_fts(rowid, body) VALUES (?, ?)",
                (cursor.lastrowid, fts.index_text(f"{title}\n{chunk.text}")),
            )
            jobs.append(EmbedJob(chunk_id, embed_text(title, chunk.text), digest))
        return jobs

    def _delete_chunks(self, conn, entry_id: str) -> None:
        if self.db.vector_state.ok:
            ids = {row[0] for row in conn.execute(
                "SELECT id FROM knowledge_chunks WHERE entry_id = ?", (entry_id,))}
            conn.execute(
                "DELETE FROM chunk_vec WHERE chunk_id IN "
                "(SELECT id FROM knowledge_chunks WHERE entry_id = ?)",
                (entry_id,),
            )
            self._changed(conn, ids, [])
        conn.execute("DELETE FROM knowledge_chunks WHERE entry_id = ?", (entry_id,))

    def set_tiers(self, entry_id: str, digest: str, abstract: str, overview: str) -> bool:
        """Store LLM tiers, unless the entry changed (or went) since they were asked for."""
        with self.db.transaction() as conn:
            cursor = conn.execute(
                "UPDATE knowledge_entries SET abstract = ?, overview = ?, tiers_by = 'llm' "
                "WHERE id = ? AND content_hash = ?",
                (abstract, overview, entry_id, digest),
            )
        return cursor.rowcount == 1

    def delete(self, entry_id: str) -> None:
        with self.db.transaction() as conn:
            self._delete_chunks(conn, entry_id)
            cursor = conn.execute("DELETE FROM knowledge_entries WHERE id = ?", (entry_id,))
        if cursor.rowcount == 0:
            raise NotFound(f"no knowledge entry {entry_id}")

    def delete_source(self, owner_id: str | None, source_type: str, source_id: str) -> bool:
        """Delete the entry of one source (an unpublished post, a removed file)."""
        row = self.db.connection().execute(
            "SELECT id FROM knowledge_entries WHERE ifnull(owner_id, '') = ? AND source_type = ? "
            "AND source_id = ?",
            (owner_id or "", source_type, source_id),
        ).fetchone()
        if row is None:
            return False
        self.delete(row["id"])
        return True

    def sources(self, owner_id: str | None, source_type: str) -> dict[str, str]:
        """source_id -> content hash of every entry of one owner and type."""
        rows = self.db.connection().execute(
            "SELECT source_id, content_hash FROM knowledge_entries WHERE ifnull(owner_id, '') = ? "
            "AND source_type = ? AND source_id IS NOT NULL",
            (owner_id or "", source_type),
        ).fetchall()
        return {row["source_id"]: row["content_hash"] for row in rows}

    # -- reads -------------------------------------------------------------------------

    def _get(self, conn, entry_id: str) -> Entry:
        row = conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM knowledge_entries e WHERE e.id = ?", (entry_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no knowledge entry {entry_id}")
        return _entry(row)

    def read(self, entry_id: str) -> Entry:
        """The entry whoever owns it (internal callers: tier writer, CLI)."""
        return self._get(self.db.connection(), entry_id)

    def get(self, entry_id: str, *, viewer_id: str) -> Entry:
        """The entry if `viewer_id` may see it (own or shared); NotFound otherwise."""
        entry = self.read(entry_id)
        if entry.owner_id not in (None, viewer_id):
            raise NotFound(f"no knowledge entry {entry_id}")
        return entry

    def list(
        self, *, viewer_id: str, source_type: str | None = None, limit: int = 50, offset: int = 0
    ) -> tuple[list[Entry], int]:
        where = f"{_VISIBLE} AND (:type IS NULL OR e.source_type = :type)"
        params = {"viewer": viewer_id, "type": source_type, "limit": limit, "offset": offset}
        conn = self.db.connection()
        rows = conn.execute(
            f"SELECT {_ENTRY_COLUMNS} FROM knowledge_entries e WHERE {where} "
            "ORDER BY e.created_at DESC, e.id LIMIT :limit OFFSET :offset",
            params,
        ).fetchall()
        total = conn.execute(
            f"SELECT count(*) FROM knowledge_entries e WHERE {where}", params
        ).fetchone()[0]
        return [_entry(row) for row in rows], total

    def stats(self, *, viewer_id: str) -> dict:
        rows = self.db.connection().execute(
            f"SELECT e.source_type, count(*) AS n FROM knowledge_entries e WHERE {_VISIBLE} "
            "GROUP BY e.source_type ORDER BY e.source_type",
            {"viewer": viewer_id},
        ).fetchall()
        by_type = {row["source_type"]: row["n"] for row in rows}
        return {"total": sum(by_type.values()), "by_source_type": by_type}

    # -- search ------------------------------------------------------------------------

    def keyword(
        self, query: str, *, viewer_id: str, source_type: str | None = None, limit: int = 10
    ) -> list[Hit]:
        """FTS5 BM25 over the caller's and shared chunks; any query text is safe."""
        return self._hits(self._keyword_ranking(query, viewer_id, source_type, limit))

    def semantic(
        self, vector, *, viewer_id: str, source_type: str | None = None, limit: int = 10
    ) -> list[Hit]:
        """Nearest chunks to `vector` (cosine); VectorUnavailable when vectors cannot run."""
        return self._hits(self._semantic_ranking(vector, viewer_id, source_type, limit))

    def hybrid(
        self, query: str, vector, *, viewer_id: str, source_type: str | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        """Keyword and semantic rankings merged by RRF (k=60); filters apply before the cut."""
        pool = max(limit * 5, 50)
        rankings = [
            [cid for cid, _ in self._keyword_ranking(query, viewer_id, source_type, pool)],
            [cid for cid, _ in self._semantic_ranking(vector, viewer_id, source_type, pool)],
        ]
        return self._hits(rrf_merge(rankings)[:limit])

    def _keyword_ranking(self, query, viewer_id, source_type, limit) -> list[tuple[str, float]]:
        """(chunk id, -bm25) best first. The filtered top `limit` is taken from the best
        KEYWORD_OVERFETCH matches (ranking the FTS table alone is fast); only when too
        few of those pass the filters is every match joined and filtered."""
        expression = fts.match_query(query)
        if expression is None:
            return []
        params = {"q": expression, "viewer": viewer_id, "type": source_type, "limit": limit,
                  "over": max(KEYWORD_OVERFETCH, limit)}
        conn = self.db.connection()
        rows = conn.execute(_KEYWORD_SQL.format(cut="LIMIT :over"), params).fetchall()
        if len(rows) < limit:
            rows = conn.execute(_KEYWORD_SQL.format(cut=""), params).fetchall()
        return [(row[0], -row[1]) for row in rows]

    def _semantic_ranking(self, vector, viewer_id, source_type, limit):
        """(chunk id, cosine similarity) best first."""
        found = self._current_snapshot().search(
            np.asarray(vector, dtype=np.float32), viewer_id=viewer_id,
            source_type=source_type, k=limit, rescore=max(self.rescore, limit),
        )
        return [(chunk_id, 1.0 - distance) for chunk_id, distance in found]

    def _hits(self, ranking: list[tuple[str, float]]) -> list[Hit]:
        rows = self._hit_rows([chunk_id for chunk_id, _ in ranking])
        return [_hit(rows[cid], score) for cid, score in ranking if cid in rows]

    def _hit_rows(self, chunk_ids: list[str]) -> dict:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.db.connection().execute(
            f"SELECT {_HIT_COLUMNS} FROM knowledge_chunks c "
            f"JOIN knowledge_entries e ON e.id = c.entry_id WHERE c.id IN ({marks})",
            chunk_ids,
        ).fetchall()
        return {row["chunk_id"]: row for row in rows}

    # -- vectors -----------------------------------------------------------------------

    def _generation(self, conn) -> str:
        # The dimension is part of the key: a reindex may switch models under us.
        return f"{_meta.get(conn, GENERATION_KEY)}:{self.db.embed_dim}"

    def _changed(self, conn, removed: set[str], rows: list) -> None:
        """Record a vector change (inside the writing transaction) and patch the snapshot.

        The patched snapshot carries the new generation, which exists only if the
        transaction commits; after a rollback it mismatches and is reloaded in full.
        Writes by other processes change the generation too and force a reload.
        """
        before = self._generation(conn)
        _meta.put(conn, GENERATION_KEY, new_id())
        with self._snapshot_lock:
            snapshot = self._snapshot
            if snapshot is not None and snapshot.generation == before:
                self._snapshot = snapshot.changed(self._generation(conn), removed, rows)
            else:
                self._snapshot = None

    def _current_snapshot(self) -> _vecindex.Snapshot:
        conn = self.db.require_vectors()
        generation = self._generation(conn)
        snapshot = self._snapshot
        if snapshot is not None and snapshot.generation == generation:
            return snapshot
        with self._snapshot_lock:
            if self._snapshot is None or self._snapshot.generation != generation:
                rows = conn.execute(
                    "SELECT v.chunk_id, v.embedding, ifnull(e.owner_id, ''), e.source_type "
                    "FROM chunk_vec v JOIN knowledge_chunks c ON c.id = v.chunk_id "
                    "JOIN knowledge_entries e ON e.id = c.entry_id"
                ).fetchall()
                self._snapshot = _vecindex.build(generation, rows, self.db.embed_dim)
            return self._snapshot

    def unembedded(self, *, limit: int) -> list[EmbedJob]:
        rows = self.db.require_vectors().execute(
            "SELECT c.id, c.content, c.content_hash, e.title FROM knowledge_chunks c "
            "JOIN knowledge_entries e ON e.id = c.entry_id "
            "WHERE c.id NOT IN (SELECT chunk_id FROM chunk_vec) ORDER BY c.seq LIMIT ?",
            (limit,),
        ).fetchall()
        return [EmbedJob(r["id"], embed_text(r["title"], r["content"]), r["content_hash"])
                for r in rows]

    def save_embeddings(self, items: list[tuple[EmbedJob, list[float]]]) -> None:
        self.db.require_vectors()
        if not items:
            return
        with self.db.transaction() as conn:
            for job, vector in items:
                # The chunk may have been replaced while it was being embedded: skip it then.
                conn.execute(
                    "INSERT INTO chunk_vec(chunk_id, embedding, content_hash) "
                    "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM knowledge_chunks WHERE id = ?) "
                    "ON CONFLICT(chunk_id) DO UPDATE SET embedding = excluded.embedding, "
                    "content_hash = excluded.content_hash",
                    (job.row_id, np.asarray(vector, dtype=np.float32).tobytes(),
                     job.content_hash, job.row_id),
                )
            ids = [job.row_id for job, _ in items]
            self._changed(conn, set(ids), self._vector_rows(conn, ids))

    @staticmethod
    def _vector_rows(conn, chunk_ids: list[str]) -> list:
        marks = ",".join("?" * len(chunk_ids))
        return conn.execute(
            "SELECT v.chunk_id, v.embedding, ifnull(e.owner_id, ''), e.source_type "
            "FROM chunk_vec v JOIN knowledge_chunks c ON c.id = v.chunk_id "
            f"JOIN knowledge_entries e ON e.id = c.entry_id WHERE v.chunk_id IN ({marks})",
            chunk_ids,
        ).fetchall()
