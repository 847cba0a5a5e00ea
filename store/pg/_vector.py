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
