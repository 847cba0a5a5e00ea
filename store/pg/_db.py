"""PostgreSQL + pgvector: the same `Database` surface as store/_db.py, for several replicas.

Every thread gets its own connection (the stores are synchronous and run in
worker threads, as with SQLite). Migrations (store/pg/migrations, numbered like
SQLite's) and the vector tables are created at start-up under one advisory lock,
so replicas starting together do not race. Vector tables are derived, recorded
in `meta` with their model and dimension, and a mismatch is a CONFLICT exactly
like SQLite's. Background jobs take per-user advisory locks (`job_lock`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from store import _meta, _migrations, _vectors
from store._db import PerThreadConnections
from store._errors import VectorUnavailable
from store.contract import VectorState, VectorStatus
from store.pg._conn import Connection

log = logging.getLogger("chatsvc.store")

STARTUP_LOCK = 7_424_220_011  # pg_advisory_lock key for migrations + vector tables
EF_SEARCH = 100  # HNSW candidate list per query (pgvector default 40)
WRITE_TRANSACTION = "BEGIN ISOLATION LEVEL READ COMMITTED"
BUILD_MEMORY = "512MB"  # an HNSW build spilling out of maintenance_work_mem is much slower

# name -> DDL with {dim}; same names and columns as SQLite's vec0 tables.
VECTOR_TABLES: dict[str, str] = {
    "fact_vec": (
        "CREATE TABLE IF NOT EXISTS fact_vec (fact_id TEXT PRIMARY KEY REFERENCES facts(id) "
        "ON DELETE CASCADE, user_id TEXT NOT NULL, embedding vector({dim}) NOT NULL, "
        "content_hash TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS fact_vec_hnsw ON fact_vec "
        "USING hnsw (embedding vector_cosine_ops);"
        "CREATE INDEX IF NOT EXISTS fact_vec_user ON fact_vec(user_id)"
    ),
    "user_memory_vec": (
        "CREATE TABLE IF NOT EXISTS user_memory_vec (memory_id TEXT PRIMARY KEY "
        "REFERENCES user_memory(id) ON DELETE CASCADE, user_id TEXT NOT NULL, "
        "embedding vector({dim}) NOT NULL, content_hash TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS user_memory_vec_hnsw ON user_memory_vec "
        "USING hnsw (embedding vector_cosine_ops);"
        "CREATE INDEX IF NOT EXISTS user_memory_vec_user ON user_memory_vec(user_id)"
    ),
    "chunk_vec": (
        "CREATE TABLE IF NOT EXISTS chunk_vec (chunk_id TEXT PRIMARY KEY "
        "REFERENCES knowledge_chunks(id) ON DELETE CASCADE, "
        "embedding vector({dim}) NOT NULL, content_hash TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS chunk_vec_hnsw ON chunk_vec "
        "USING hnsw (embedding vector_cosine_ops)"
    ),
}


def redact(url: str) -> str:
    """The URL without its password (for logs, health and cache keys)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


class PgDatabase(PerThreadConnections):
    """One PostgreSQL database. Same public surface as `store.Database`."""

    dialect = "postgresql"

    def __init__(self, url: str, *, embed_model: str, embed_dim: int) -> None:
        self.url = url
        self.path = redact(url)
        self.embed_model = embed_model
        self.embed_dim = embed_dim
        self._init_connections()
        with self._startup_lock() as conn:
            applied = self._migrate(conn)
            self.vector_state = self._prepare_vectors(conn)
        if applied:
            log.info("postgresql migrations applied: %s", ", ".join(applied))

    # -- connections ---------------------------------------------------------------

    def _open(self) -> Connection:
        conn = Connection(self.url)
        # Filters (user, visibility) run inside the HNSW scan, which keeps going
        # until enough rows pass them (pgvector >= 0.8), instead of cutting short.
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        return conn

    def _usable(self, conn: Connection) -> bool:
        return not conn.raw.closed  # the server may drop idle connections

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """BEGIN ... COMMIT (a SAVEPOINT when nested), ROLLBACK on error.

        READ COMMITTED: a write that waited for another replica's lock on a row
        re-checks its WHERE against the committed row (`WHERE extracted_at IS NULL`
        then matches nothing) instead of failing with a serialization error.
        """
        conn = self.connection()
        nested = conn.in_transaction
        conn.execute("SAVEPOINT nested" if nested else WRITE_TRANSACTION)
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK TO nested" if nested else "ROLLBACK")
            if nested:
                conn.execute("RELEASE nested")
            raise
        conn.execute("RELEASE nested" if nested else "COMMIT")

    def describe(self) -> str:
        conn = self.connection()
        version = conn.execute("SHOW server_version").fetchone()[0]
        schema = _meta.get(conn, "schema_version")
        return f"postgresql {version}, schema v{schema}"

    # -- start-up ------------------------------------------------------------------

    @contextmanager
    def _startup_lock(self) -> Iterator[Connection]:
        conn = Connection(self.url)
        try:
            conn.execute("SELECT pg_advisory_lock(?)", (STARTUP_LOCK,))
            yield conn
        finally:
            conn.close()  # ends the session, which releases the lock

    def _migrate(self, conn: Connection) -> list[str]:
        return _migrations.apply(
            conn, package="store.pg.migrations", begin=WRITE_TRANSACTION,
            run=lambda c, sql: c.raw.execute(sql),  # several statements, no parameters
        )

    # -- vectors -----------------------------------------------------------------------

    def _prepare_vectors(self, conn: Connection) -> VectorState:
        recorded = _vectors.recorded_model(conn)
        if recorded is not None and recorded != (self.embed_model, self.embed_dim):
            model, dim = recorded
            return VectorState(
                VectorStatus.CONFLICT,
                f"CONFLICT: vectors were built with {model} ({dim}-d) but the configured "
                f"model is {self.embed_model} ({self.embed_dim}-d); run `chatsvc reindex`",
            )
        conn.execute(WRITE_TRANSACTION)
        for ddl in VECTOR_TABLES.values():
            conn.raw.execute(ddl.format(dim=self.embed_dim))
        _meta.put(conn, "embedding_model", self.embed_model)
        _meta.put(conn, "embedding_dim", str(self.embed_dim))
        conn.execute("COMMIT")
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0]
        return VectorState(VectorStatus.OK, f"pgvector {version}, {self.embed_dim}-d, HNSW")

    def require_vectors(self) -> Connection:
        if not self.vector_state.ok:
            raise VectorUnavailable(self.vector_state.detail)
        return self.connection()

    def reset_vectors(self) -> None:
        """Drop every vector table and recreate it for the configured model (reindex)."""
        with self._startup_lock() as conn:
            conn.execute(WRITE_TRANSACTION)
            for name in VECTOR_TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {name}")
            _meta.delete(conn, "embedding_model")
            _meta.delete(conn, "embedding_dim")
            conn.execute("COMMIT")
            self.vector_state = self._prepare_vectors(conn)

    @contextmanager
    def bulk_vectors(self) -> Iterator[None]:
        """Write many vectors (reindex, bulk import) without their HNSW indexes, then
        build each index once: far faster than growing the graphs row by row.
        Searches meanwhile fall back to exact scans."""
        conn = self.connection()
        for name in VECTOR_TABLES:
            conn.execute(f"DROP INDEX IF EXISTS {name}_hnsw")
        try:
            yield
        finally:
            conn.execute(f"SET maintenance_work_mem = '{BUILD_MEMORY}'")  # graph in memory
            for ddl in VECTOR_TABLES.values():
                conn.raw.execute(ddl.format(dim=self.embed_dim))
            conn.execute("RESET maintenance_work_mem")
            # Fresh statistics: with a user's row count unknown the planner scans that
            # user's rows exactly instead of using the new index, until autovacuum runs.
            conn.execute("ANALYZE")

    # -- background jobs ---------------------------------------------------------------

    @contextmanager
    def job_lock(self, job: str, key: str, *, wait: bool) -> Iterator[bool]:
        """Hold the advisory lock for (job, key) across replicas; yield whether it is held.

        wait=False gives up at once when another session holds it. The lock lives on
        its own connection, so the job may hop threads while holding it, and a
        crashed replica's lock goes with its connection.
        """
        conn = Connection(self.url)
        try:
            if wait:
                conn.execute("SELECT pg_advisory_lock(hashtextextended(?, 0))", (f"{job}:{key}",))
                held = True
            else:
                held = conn.execute(
                    "SELECT pg_try_advisory_lock(hashtextextended(?, 0))", (f"{job}:{key}",)
                ).fetchone()[0]
            yield held
        finally:
            conn.close()
