"""The vector-index component: one per vector table, configured by a `VectorSpec`.

A vector table is a derived index over a source table (facts, memories, chunks):
each vector row keeps the content hash of the text it was made from. This module
holds what both backends share — the spec, the backfill queries (`unembedded`,
`pending_count`), saving only rows that still have the hashed content, counts —
and each backend adds its writes (`_write`, `drop`) and its KNN (`nearest`):
in-memory copies over sqlite-vec (store/sqlite/_vectors.py), HNSW scans with the
filters inside on PostgreSQL (store/pg/_vectors.py), which also reads a KNN's rows in
its own statement (`nearest_rows`). `Database.vectors(spec)`
builds the backend's index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from store._errors import StoreError
from store.clock import now_iso
from store.contract import Database, EmbedJob
from store.sql import in_list, share_lock, visible

# sqlite-vec's limit for a KNN `k`, kept by every backend so answers agree.
KNN_MAX_K = 4096


# vector table -> (its source table, its id column). A source row's `embedded_hash` is
# the content hash its vector was made from, written in the vector's transaction and
# cleared with it: the rows waiting for a vector are found through a partial index on
# the source table (migration 0017), not by a lookup per row in the vector table, which
# on SQLite's vec0 took 2.6 s at 100k facts, on every indexer pass and `/health`.
EMBEDDED: dict[str, tuple[str, str]] = {
    "fact_vec": ("facts", "fact_id"),
    "user_memory_vec": ("user_memory", "memory_id"),
    "chunk_vec": ("knowledge_chunks", "chunk_id"),
    "message_vec": ("message_index", "message_id"),
}


def waiting(alias: str = "") -> str:
    """SQL: the row has no vector of its present text (the partial indexes' condition)."""
    a = f"{alias}." if alias else ""
    return f"({a}embedded_hash IS NULL OR {a}embedded_hash <> {a}content_hash)"


def forget_embedded() -> list[str]:
    """Statements clearing every `embedded_hash` (the vector tables are being reset)."""
    return [f"UPDATE {source} SET embedded_hash = NULL WHERE embedded_hash IS NOT NULL"
            for source, _ in EMBEDDED.values()]


def adopt_embedded() -> list[str]:
    """Statements marking rows whose vector of their present text exists but whose
    `embedded_hash` is not set: once after migration 0017, and cheap after it (only
    rows without a mark are looked up)."""
    return [f"UPDATE {source} SET embedded_hash = content_hash WHERE embedded_hash IS NULL "
            f"AND EXISTS (SELECT 1 FROM {table} v WHERE v.{key} = {source}.id "
            f"AND v.content_hash = {source}.content_hash)"
            for table, (source, key) in EMBEDDED.items()]


def deferred_tables(tables: Collection[str] | None, known: Collection[str]) -> list[str]:
    """The vector tables a `bulk_vectors(tables)` names (None: all `known`); StoreError
    for a name neither backend has, on both backends alike."""
    names = list(known if tables is None else tables)
    if unknown := set(names) - set(known):
        raise StoreError(f"no vector table {sorted(unknown)}")
    return names


def content_hash(text: str) -> str:
    """The hash a source row keeps of its embedded text and its vector of the text it was
    made from: where they differ, the vector is stale."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class VectorSpec:
    """Where one vector table's rows come from.

    `source` is the FROM clause of the source rows under `alias` (with any join the
    filters need); `text` the SQL of the embedded text; `owner` the SQL of the row's
    user for tables partitioned per user, None for one shared index; `live` the rows
    that should have a vector (may use `$now`); `keep` the rows a finished embedding
    may still be saved for; `labels` the (owner or '', kind) of a shared index's rows,
    which its in-memory copy filters on; `quantised` makes SQLite's per-user in-memory
    index rescore with float16 (large partitions: half the memory) instead of float32
    (distances as vec0 gives them).
    """

    table: str
    id_column: str
    source: str
    alias: str
    text: str
    owner: str | None
    live: str = "TRUE"
    keep: str = "TRUE"
    order: str = "id"
    labels: str = "'', ''"
    quantised: bool = False


@dataclass(frozen=True)
class Scope:
    """The rows one KNN may return.

    PostgreSQL filters with `where` (SQL over the spec's alias, `$name` params in
    `params`) inside its HNSW scan; the in-memory copies filter on `user_id` (the
    partition) or `viewer_id`/`kind` (masks) and leave `where` to the caller's read
    of the rows, which must apply it anyway.
    """

    user_id: str | None = None
    viewer_id: str = ""
    kind: str | None = None
    where: str = "TRUE"
    params: Mapping[str, Any] = field(default_factory=dict)


# (row id, cosine distance, content hash the vector was made from, when known)
Neighbour = tuple[str, float, str | None]
# (row id, owner or None, vector, content hash)
VectorRow = tuple[str, str | None, Sequence[float], str]


class VectorIndex:
    """Backfill, counts and checked saving for one vector table; the backend subclass
    writes rows (`_write`, `drop`) and answers KNN queries (`nearest`)."""

    def __init__(self, db: Database, spec: VectorSpec) -> None:
        self.db = db
        self.spec = spec

    def check(self, vector: Sequence[float]) -> None:
        if len(vector) != self.db.embed_dim:
            raise ValueError(f"expected a {self.db.embed_dim}-d vector, got {len(vector)}-d")

    # -- backfill --------------------------------------------------------------------

    def _current(self) -> str:
        """SQL: the source row has a vector made from its present text."""
        a = self.spec.alias
        return f"{a}.embedded_hash = {a}.content_hash"

    def _missing(self, where: str = "TRUE") -> str:
        s = self.spec
        return f"FROM {s.source} WHERE {s.live} AND ({where}) AND {waiting(s.alias)}"

    def unembedded(self, *, limit: int, where: str = "TRUE",
                   params: Mapping[str, Any] | None = None) -> list[EmbedJob]:
        """Live rows without a vector or with one made from other text, of those meeting
        `where` (SQL over the spec's alias, `$name` params)."""
        self.db.require_vectors()
        a = self.spec.alias
        rows = self.db.execute(
            f"SELECT {a}.id AS id, {self.spec.text} AS text, {a}.content_hash AS hash "
            f"{self._missing(where)} ORDER BY {a}.{self.spec.order} LIMIT $limit",
            {**(params or {}), "now": now_iso(), "limit": limit},
        ).fetchall()
        return [EmbedJob(row["id"], row["text"], row["hash"]) for row in rows]

    def pending_count(self, where: str = "TRUE", params: Mapping[str, Any] | None = None
                      ) -> int:
        """How many rows `unembedded` would return without a limit (progress, health),
        of those meeting `where` (SQL over the spec's alias, `$name` params)."""
        self.db.require_vectors()
        return self.db.scalar(f"SELECT count(*) {self._missing(where)}",
                              {**(params or {}), "now": now_iso()})

    def scan(self, where: str, params: Mapping[str, Any], *, offset: int, limit: int
             ) -> list[tuple[EmbedJob, bool]]:
        """Live rows meeting `where` in the spec's order from `offset`, each with whether
        its vector is current: a job walks its rows by position and resumes there."""
        self.db.require_vectors()
        a = self.spec.alias
        rows = self.db.execute(
            f"SELECT {a}.id AS id, {self.spec.text} AS text, {a}.content_hash AS hash, "
            f"CASE WHEN {self._current()} THEN 1 ELSE 0 END AS current "
            f"FROM {self.spec.source} WHERE {self.spec.live} AND ({where}) "
            f"ORDER BY {a}.{self.spec.order} LIMIT $limit OFFSET $offset",
            {**params, "now": now_iso(), "limit": limit, "offset": offset},
        ).fetchall()
        return [(EmbedJob(row["id"], row["text"], row["hash"]), bool(row["current"]))
                for row in rows]

    def count(self, user_id: str | None = None) -> int:
        self.db.require_vectors()
        if user_id is None:
            return self.db.scalar(f"SELECT count(*) FROM {self.spec.table}")
        return self.db.scalar(
            f"SELECT count(*) FROM {self.spec.table} WHERE user_id = $user", {"user": user_id})

    # -- writes ----------------------------------------------------------------------

    def put(self, user_id: str | None, rows: list[tuple[str, Sequence[float], str]]) -> None:
        """Replace the vectors of (row id, vector, content hash) rows inside the caller's
        transaction. Skipped while vectors are unavailable (reindex rebuilds them)."""
        if self.db.vector_state.ok and rows:
            self._written([(row_id, user_id, vector, digest) for row_id, vector, digest in rows])

    def save(self, items: list[tuple[EmbedJob, Sequence[float]]]) -> None:
        """Store vectors for jobs whose row still has the text they were made from
        (it may have changed or gone while it was being embedded)."""
        self.db.require_vectors()
        if not items:
            return
        s = self.spec
        with self.db.transaction():
            ids, params = in_list("id", {job.row_id for job, _ in items})
            current = {
                row["id"]: (row["hash"], row["owner"]) for row in self.db.execute(
                    f"SELECT {s.alias}.id AS id, {s.alias}.content_hash AS hash, "
                    f"{s.owner or 'NULL'} AS owner FROM {s.source} "
                    f"WHERE {s.alias}.id IN {ids} AND {s.keep}"
                    f"{share_lock(self.db.dialect, s.alias)}", params).fetchall()
            }
            rows = [(job.row_id, current[job.row_id][1], vector, job.content_hash)
                    for job, vector in items
                    if current.get(job.row_id, (None,))[0] == job.content_hash]
            if rows:
                self._written(rows)

    def _written(self, rows: list[VectorRow]) -> None:
        self._write(rows)
        self.db.executemany(
            f"UPDATE {EMBEDDED[self.spec.table][0]} SET embedded_hash = $hash WHERE id = $id",
            [{"id": row_id, "hash": digest} for row_id, _, _, digest in rows])

    def _write(self, rows: list[VectorRow]) -> None:
        raise NotImplementedError

    def drop(self, row_ids: Sequence[str], *, user_id: str | None = None) -> None:
        """Delete these rows' vectors inside the caller's transaction."""
        if not self.db.vector_state.ok or not row_ids:
            return
        self._drop(row_ids, user_id)
        self.db.executemany(
            f"UPDATE {EMBEDDED[self.spec.table][0]} SET embedded_hash = NULL WHERE id = $id",
            [{"id": row_id} for row_id in row_ids])

    def _drop(self, row_ids: Sequence[str], user_id: str | None) -> None:
        raise NotImplementedError

    def forget(self, user_id: str) -> None:
        """Delete every vector of `user_id` (a per-user table) inside the caller's
        transaction: deleting the account. Skipped while vectors are unavailable, like
        `drop`; the reindex that state needs rebuilds from rows that are gone by then."""
        if not self.db.vector_state.ok:
            return
        s = self.spec
        ids = [row["id"] for row in self.db.execute(
            f"SELECT {s.id_column} AS id FROM {s.table} WHERE user_id = $user",
            {"user": user_id}).fetchall()]
        self.drop(ids, user_id=user_id)

    # -- search ----------------------------------------------------------------------

    def nearest(self, vector: Sequence[float], *, k: int, scope: Scope) -> list[Neighbour]:
        """The `k` nearest rows in `scope`, nearest first; VectorUnavailable when vector
        search cannot run."""
        raise NotImplementedError

    def nearest_rows(self, vector: Sequence[float], *, k: int, scope: Scope, columns: str
                     ) -> list[tuple[Any, float]]:
        """(row, cosine distance) of the `k` nearest rows meeting `scope.where` whose
        vector was made from their present text, nearest first; a row holds `columns`
        (SQL over the spec's source). Here the rows are read after the KNN, which leaves
        `scope.where` to this read: the KNN asks for spare rows, so that rows it drops
        (expired facts, other projects' memories) rarely cost a result. PostgreSQL
        filters inside its scan and reads the rows in the KNN's statement."""
        spare = min(KNN_MAX_K, 2 * k + 10)
        found = {row_id: (distance, digest)
                 for row_id, distance, digest in self.nearest(vector, k=spare, scope=scope)}
        if not found:
            return []
        a = self.spec.alias
        ids, params = in_list("knn_id", found)
        rows = self.db.execute(
            f"SELECT {columns}, {a}.id AS knn_id, {a}.content_hash AS knn_hash, "
            f"{visible(scope.where)} FROM {self.spec.source} WHERE {a}.id IN {ids}",
            {**scope.params, **params}).fetchall()
        return self._current_first([(row, *found[row["knn_id"]]) for row in rows
                                    if row["visible"]])[:k]

    @staticmethod
    def _current_first(found: list[tuple[Any, float, str | None]]
                       ) -> list[tuple[Any, float]]:
        """(row, distance) nearest first, of those whose vector was made from the row's
        present text (a vector left from other text while vectors were off never
        matches; a shared in-memory index knows no hash: None)."""
        kept = [(row, distance) for row, distance, digest in found
                if digest is None or digest == row["knn_hash"]]
        return sorted(kept, key=lambda hit: (hit[1], hit[0]["knn_id"]))


class OwnVectors:
    """The `Reindexable` methods of a store whose rows each have their vector in
    `_vectors` (facts, memories): the backfill and `chatsvc reindex` go through these."""

    _vectors: VectorIndex

    def forget_user(self, user_id: str) -> None:
        """The user's vectors, which no foreign key reaches (the rows go with the user's
        row: `store.accounts`)."""
        self._vectors.forget(user_id)

    def unembedded(self, *, limit: int) -> list[EmbedJob]:
        """Live rows without a vector or with one made from other text."""
        return self._vectors.unembedded(limit=limit)

    def pending_count(self) -> int:
        """How many rows `unembedded` would return without a limit (progress bars)."""
        return self._vectors.pending_count()

    def save_embeddings(self, items: list[tuple[EmbedJob, Sequence[float]]]) -> None:
        """Store vectors for jobs whose row is still live with the text they were made from."""
        self._vectors.save(items)
