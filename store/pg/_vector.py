"""pgvector values travel in pgvector's binary format (server-side binding): formatting
768 floats as text costs ~1 ms of Python per vector, packing them costs microseconds."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import pq
from psycopg.adapt import Dumper


@dataclass(frozen=True, eq=False)
class Vector:
    values: np.ndarray  # float32, one dimension


def vector(values: Sequence[float], dim: int) -> Vector:
    """A query or row vector of the store's dimension, ready to bind."""
    if len(values) != dim:
        raise ValueError(f"expected a {dim}-d vector, got {len(values)}-d")
    return Vector(np.asarray(values, dtype=np.float32))


class _VectorDumper(Dumper):
    format = pq.Format.BINARY

    def dump(self, obj: Vector) -> bytes:
        # pgvector's vector_recv: uint16 dimension, uint16 unused, big-endian float4s.
        return struct.pack(">HH", obj.values.size, 0) + obj.values.astype(">f4").tobytes()


def register(conn: psycopg.Connection) -> None:
    """Teach `conn` to send `Vector` parameters as pgvector's binary type."""
    oid = conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0]
    dumper = type("VectorDumper", (_VectorDumper,), {"oid": oid})
    conn.adapters.register_dumper(Vector, dumper)


class PgUserVectors:
    """`store._uservec.UserVectors`'s writes for pgvector tables (upsert, delete).

    Searches need no in-memory copy here: the PostgreSQL stores run KNN in SQL
    through the HNSW index with the user filter inside the scan."""

    def __init__(self, db, table: str, id_column: str) -> None:
        self.db = db
        self.table = table
        self.id_column = id_column

    def put(self, conn, user_id: str, rows: list[tuple[str, Sequence[float], str]]) -> None:
        if not self.db.vector_state.ok or not rows:
            return
        conn.bound_cursor().executemany(
            f"INSERT INTO {self.table}({self.id_column}, user_id, embedding, content_hash) "
            f"VALUES (?, ?, ?, ?) ON CONFLICT ({self.id_column}) DO UPDATE SET "
            "user_id = excluded.user_id, embedding = excluded.embedding, "
            "content_hash = excluded.content_hash",
            [(row_id, user_id, vector(values, self.db.embed_dim), digest)
             for row_id, values, digest in rows],
        )

    def drop(self, conn, row_id: str, user_id: str) -> None:
        if self.db.vector_state.ok:
            conn.execute(f"DELETE FROM {self.table} WHERE {self.id_column} = ?", (row_id,))
