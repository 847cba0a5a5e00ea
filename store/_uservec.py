"""Per-user vec0 tables (`fact_vec`, `user_memory_vec`) searched in memory.

vec0's KNN reads every vector of the user's partition out of SQLite on each
query (~15 ms at 10k x 384 here); an exact float32 copy in numpy
(`_vecindex.Partitions`) answers in a fraction of that. vec0 stays the
persistent source. Every vector write bumps the user's generation in `meta`
inside the writing transaction, so writes by other processes (or a reindex,
which changes the epoch) make the copy reload; writes by this process patch it.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np

from store import _meta, _vecindex
from store._db import Database
from store._vectors import EPOCH_KEY
from store.clock import new_id

# `nearest()`'s answer passed to SQL as JSON (:knn): joined with the plain table there.
KNN_ROWS = ("SELECT value ->> 0 AS id, value ->> 1 AS distance, value ->> 2 AS content_hash "
            "FROM json_each(:knn)")


class UserVectors:
    """Writes to and exact KNN over one vec0 table keyed by `id_column`, partitioned
    by `user_id`, with a `content_hash` auxiliary column."""

    def __init__(self, db: Database, table: str, id_column: str) -> None:
        self.db = db
        self.table = table
        self.id_column = id_column
        self._partitions = _vecindex.Partitions(db.embed_dim)

    def _blob(self, vector: Sequence[float]) -> bytes:
        self._check(vector)
        return array("f", vector).tobytes()

    def _check(self, vector: Sequence[float]) -> None:
        if len(vector) != self.db.embed_dim:
            raise ValueError(f"expected a {self.db.embed_dim}-d vector, got {len(vector)}-d")

    def put(self, conn, user_id: str, rows: list[tuple[str, Sequence[float], str]]) -> None:
        """Replace the vectors of the user's (row id, vector, content hash) rows inside the
        caller's transaction (sqlite-vec 0.1.9 has no upsert: delete + insert); one patch
        of the in-memory copy per call. Skipped while vectors are unavailable."""
        if not self.db.vector_state.ok or not rows:
            return
        # Keyed by id: a row listed twice is stored once, as vec0 holds it.
        stored = list({row_id: (row_id, self._blob(vector), digest)
                       for row_id, vector, digest in rows}.values())
        for row_id, blob, digest in stored:
            conn.execute(f"DELETE FROM {self.table} WHERE {self.id_column} = ?", (row_id,))
            conn.execute(
                f"INSERT INTO {self.table}({self.id_column}, user_id, embedding, content_hash) "
                "VALUES (?, ?, ?, ?)",
                (row_id, user_id, blob, digest),
            )
        self._changed(conn, user_id, {row[0] for row in stored}, stored)

    def drop(self, conn, row_id: str, user_id: str) -> None:
        if self.db.vector_state.ok:
            conn.execute(f"DELETE FROM {self.table} WHERE {self.id_column} = ?", (row_id,))
            self._changed(conn, user_id, {row_id}, [])

    def nearest(self, user_id: str, vector: Sequence[float], k: int):
        """(row id, cosine distance, content hash of the vector) of the user's `k`
        nearest vectors, nearest first. VectorUnavailable when vectors are off."""
        conn = self.db.require_vectors()
        self._check(vector)
        generation = self._generation(conn, user_id)
        snapshot, hashes = self._partitions.get(
            user_id, generation, lambda: conn.execute(
                f"SELECT {self.id_column}, embedding, content_hash FROM {self.table} "
                "WHERE user_id = ?", (user_id,)).fetchall())
        found = snapshot.search(np.asarray(vector, dtype=np.float32), k=k, rescore=None)
        return [(row_id, distance, hashes[row_id]) for row_id, distance in found]

    def _key(self, user_id: str) -> str:
        return f"vecgen:{self.table}:{user_id}"

    def _generation(self, conn, user_id: str) -> str:
        epoch, user = conn.execute(
            "SELECT (SELECT value FROM meta WHERE key = ?), (SELECT value FROM meta WHERE key = ?)",
            (EPOCH_KEY, self._key(user_id)),
        ).fetchone()
        return f"{epoch}:{user}:{self.db.embed_dim}"

    def _changed(self, conn, user_id: str, removed: set[str], rows: list) -> None:
        before = self._generation(conn, user_id)
        _meta.put(conn, self._key(user_id), new_id())
        self._partitions.changed(user_id, before, self._generation(conn, user_id), removed, rows)
