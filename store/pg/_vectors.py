"""PostgreSQL's vector index: pgvector tables searched through HNSW, no in-memory copy.

Filters (user, liveness, visibility) run inside the HNSW scan, which keeps going
until enough rows pass them (`hnsw.iterative_scan`, pgvector >= 0.8), so `k` rows
come back whenever `k` exist. Vectors are stored as pgvector's halfvec (float16) and
travel in its binary format (server-side binding): formatting 768 floats as text
costs ~1 ms of Python per vector, packing them costs microseconds. Large batches (a
backfill, a reindex, a bulk load) go through binary COPY into a session-local staging
table, then one upsert and one `embedded_hash` update: at 100k facts 13.2 s of
row-by-row inserts and 8.1 s of row-by-row updates became COPY's (docs/scaling.md).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import pq
from psycopg.adapt import Dumper, PyFormat

from store.vectors import EMBEDDED, Neighbour, Scope, VectorIndex, VectorRow

COPY_ROWS = 64  # from this many rows a write is staged through COPY


@dataclass(frozen=True, eq=False)
class Vector:
    values: np.ndarray  # float32, one dimension; sent as halfvec


class _VectorDumper(Dumper):
    format = pq.Format.BINARY

    def dump(self, obj: Vector) -> bytes:
        # pgvector's halfvec_recv: uint16 dimension, uint16 unused, big-endian float2s.
        return struct.pack(">HH", obj.values.size, 0) + obj.values.astype(">f2").tobytes()


def register(conn: psycopg.Connection) -> None:
    """Teach `conn` to send `Vector` parameters (and COPY fields) as pgvector's binary
    halfvec."""
    oid = conn.execute("SELECT 'halfvec'::regtype::oid").fetchone()[0]
    dumper = type("VectorDumper", (_VectorDumper,), {"oid": oid})
    conn.adapters.register_dumper(Vector, dumper)


class PgVectors(VectorIndex):
    def _vector(self, values: Sequence[float]) -> Vector:
        self.check(values)
        vector = np.asarray(values, dtype=np.float32)
        # Unit length: cosine distance ignores the scale, and float16 then neither
        # overflows (|x| > 65504 is an error in halfvec) nor loses small components.
        norm = float(np.linalg.norm(vector))
        return Vector(vector / norm if norm > 0 else vector)

    @property
    def _owned(self) -> bool:
        """Whether rows carry their user (tables partitioned per user)."""
        return self.spec.owner is not None

    def _columns(self) -> str:
        return (f"{self.spec.id_column}, {'user_id, ' if self._owned else ''}"
                "embedding, content_hash")

    def _upsert(self) -> str:
        """What an insert does with a row that has a vector already: replace it."""
        return (f"ON CONFLICT ({self.spec.id_column}) DO UPDATE SET "
                f"{'user_id = excluded.user_id, ' if self._owned else ''}"
                "embedding = excluded.embedding, content_hash = excluded.content_hash")

    def _write(self, rows: list[VectorRow]) -> None:
        self.db.executemany(
            f"INSERT INTO {self.spec.table}({self._columns()}) "
            f"VALUES ($id, {'$user, ' if self._owned else ''}$vec, $hash) {self._upsert()}",
            [{"id": row_id, "user": user_id, "vec": self._vector(vector), "hash": digest}
             for row_id, user_id, vector, digest in rows])

    def _written(self, rows: list[VectorRow]) -> None:
        if len(rows) < COPY_ROWS:
            super()._written(rows)
            return
        t, key = self.spec.table, self.spec.id_column
        stage, source = f"{t}_stage", EMBEDDED[t][0]
        with self.db.transaction():  # the caller's, as a savepoint
            # Session-local, emptied at commit; the insert into `t` checks the dimension.
            user = "user_id TEXT, " if self._owned else ""
            self.db.execute(f"CREATE TEMP TABLE IF NOT EXISTS {stage} ({key} TEXT, {user}"
                            "embedding halfvec, content_hash TEXT) ON COMMIT DELETE ROWS")
            self.db.execute(f"TRUNCATE {stage}")  # an earlier batch of this transaction
            self._copy(stage, rows)
            self.db.execute(f"INSERT INTO {t}({self._columns()}) SELECT {self._columns()} "
                            f"FROM {stage} {self._upsert()}")
            self.db.execute(f"UPDATE {source} SET embedded_hash = s.content_hash "
                            f"FROM {stage} s WHERE {source}.id = s.{key}")

    def _copy(self, stage: str, rows: list[VectorRow]) -> None:
        owned = self._owned
        vector_oid = self.db.connection().adapters.get_dumper(Vector, PyFormat.BINARY).oid
        types = ["text", *(["text"] if owned else []), vector_oid, "text"]
        with self.db.copy(f"COPY {stage}({self._columns()}) FROM STDIN (FORMAT BINARY)",
                          types) as copy:
            for row_id, user_id, vector, digest in rows:
                vec = self._vector(vector)
                copy.write_row((row_id, user_id, vec, digest) if owned
                               else (row_id, vec, digest))

    def _drop(self, row_ids: Sequence[str], user_id: str | None) -> None:
        self.db.executemany(
            f"DELETE FROM {self.spec.table} WHERE {self.spec.id_column} = $id",
            [{"id": row_id} for row_id in row_ids])

    def nearest(self, vector: Sequence[float], *, k: int, scope: Scope) -> list[Neighbour]:
        rows = self._knn(vector, k=k, scope=scope, columns="")
        # relaxed_order scans may return near-ties out of order: sort exactly.
        return sorted(((row["knn_id"], row["knn_distance"], row["knn_vector_hash"])
                       for row in rows), key=lambda found: (found[1], found[0]))

    def nearest_rows(self, vector: Sequence[float], *, k: int, scope: Scope, columns: str
                     ) -> list[tuple[Any, float]]:
        """The rows come from the KNN's own statement, whose filters leave no row to
        drop: one round trip, and only the `k` rows asked for."""
        rows = self._knn(vector, k=k, scope=scope,
                         columns=f"{columns}, {self.spec.alias}.content_hash AS knn_hash, ")
        return self._current_first(
            [(row, row["knn_distance"], row["knn_vector_hash"]) for row in rows])

    def _knn(self, vector: Sequence[float], *, k: int, scope: Scope, columns: str
             ) -> list[dict]:
        self.db.require_vectors()
        s = self.spec
        partition = "v.user_id = $knn_user AND " if self._owned else ""
        # No content-hash test in here: as a join condition it makes the planner expect
        # one row and sort an exact scan instead of walking HNSW (28 ms against 2.9 ms at
        # 5k facts). Callers compare the returned hash with the row's, as on SQLite.
        rows = self.db.execute(
            f"SELECT {columns}v.{s.id_column} AS knn_id, "
            "v.embedding <=> $knn_vec AS knn_distance, v.content_hash AS knn_vector_hash "
            f"FROM {s.table} v, {s.source} "
            f"WHERE {partition}{s.alias}.id = v.{s.id_column} AND {scope.where} "
            "ORDER BY knn_distance LIMIT $knn_k",
            {**scope.params, "knn_user": scope.user_id, "knn_vec": self._vector(vector),
             "knn_k": max(1, k)},
        ).fetchall()
        for row in rows:
            row["knn_distance"] = float(row["knn_distance"])
        return rows
