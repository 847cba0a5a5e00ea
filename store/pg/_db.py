"""PostgreSQL + pgvector: the same `store.contract.Database` as SQLite's, for several replicas.

psycopg 3 is used natively: queries are rendered to its `%(name)s` placeholders
(store/sql.py), rows come back as dicts, parameters bind server-side (vectors in
binary), and driver errors are mapped to store exceptions. Every thread gets its
own connection (the stores are synchronous and run in worker threads, as with
SQLite). Migrations (store/pg/migrations, numbered like SQLite's) and the vector
tables are created at start-up under one advisory lock, so replicas starting
together do not race. Vector tables are derived, recorded in `meta` with their
model and dimension, and a mismatch is a CONFLICT exactly like SQLite's.
Background jobs take per-user advisory locks (`job_lock`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import pq
from psycopg.rows import args_row, dict_row

from store import _meta, _migrations
from store._errors import ConstraintViolation, QueryFailed, StoreError, VectorUnavailable
from store._handle import Handle
from store.contract import VectorState, VectorStatus
from store.pg import _vectors
from store.pg._vectors import PgVectors
from store.sql import POSTGRESQL
from store.vectors import VectorSpec, adopt_embedded, deferred_tables, forget_embedded

log = logging.getLogger("chatsvc.store")

STARTUP_LOCK = 7_424_220_011  # pg_advisory_lock key for migrations + vector tables
# HNSW candidate list per query (pgvector default 40). At 120, recall@10 over 200
# queries fell below 0.98 in 2 of 8 measured 100k graphs (facts 0.97, semantic 0.975);
# at 150 it was >= 0.985 in all 8, for ~0.6 ms more per search (docs/scaling.md).
EF_SEARCH = 150
# READ COMMITTED: a write that waited for another replica's lock on a row re-checks
# its WHERE against the committed row (`WHERE extracted_at IS NULL` then matches
# nothing) instead of failing with a serialization error.
WRITE_TRANSACTION = "BEGIN ISOLATION LEVEL READ COMMITTED"
# For an HNSW build: the graph in memory (spilling out of maintenance_work_mem is much
# slower), and parallel workers whatever the heap's size. PostgreSQL plans workers from
# the heap alone, and vectors that go to TOAST leave it small: at 20k TOASTed rows the
# build ran serially, 27.5 s against 13.3 s with one worker (docs/scaling.md).
BUILD_SETTINGS = {"maintenance_work_mem": "512MB", "min_parallel_table_scan_size": "0"}

# name -> DDL with {dim}; same names and columns as SQLite's vector tables. Vectors are
# stored as halfvec (float16): half the table and index of `vector`, inline rather than
# in TOAST, a faster HNSW build, the same recall@10 (docs/scaling.md).
VECTOR_TABLES: dict[str, str] = {
    "fact_vec": (
        "CREATE TABLE IF NOT EXISTS fact_vec (fact_id TEXT PRIMARY KEY REFERENCES facts(id) "
        "ON DELETE CASCADE, user_id TEXT NOT NULL, embedding halfvec({dim}) NOT NULL, "
        "content_hash TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS fact_vec_hnsw ON fact_vec "
        "USING hnsw (embedding halfvec_cosine_ops);"
        "CREATE INDEX IF NOT EXISTS fact_vec_user ON fact_vec(user_id)"
    ),
    "user_memory_vec": (
        "CREATE TABLE IF NOT EXISTS user_memory_vec (memory_id TEXT PRIMARY KEY "
        "REFERENCES user_memory(id) ON DELETE CASCADE, user_id TEXT NOT NULL, "
        "embedding halfvec({dim}) NOT NULL, content_hash TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS user_memory_vec_hnsw ON user_memory_vec "
        "USING hnsw (embedding halfvec_cosine_ops);"
        "CREATE INDEX IF NOT EXISTS user_memory_vec_user ON user_memory_vec(user_id)"
    ),
    "chunk_vec": (
        "CREATE TABLE IF NOT EXISTS chunk_vec (chunk_id TEXT PRIMARY KEY "
        "REFERENCES knowledge_chunks(id) ON DELETE CASCADE, "
        "embedding halfvec({dim}) NOT NULL, content_hash TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS chunk_vec_hnsw ON chunk_vec "
        "USING hnsw (embedding halfvec_cosine_ops)"
    ),
    "message_vec": (
        "CREATE TABLE IF NOT EXISTS message_vec (message_id TEXT PRIMARY KEY "
        "REFERENCES message_index(id) ON DELETE CASCADE, user_id TEXT NOT NULL, "
        "embedding halfvec({dim}) NOT NULL, content_hash TEXT NOT NULL);"
        "CREATE INDEX IF NOT EXISTS message_vec_hnsw ON message_vec "
        "USING hnsw (embedding halfvec_cosine_ops);"
        "CREATE INDEX IF NOT EXISTS message_vec_user ON message_vec(user_id)"
    ),
}


def redact(url: str) -> str:
    """The URL without its password (for logs, health and cache keys)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except psycopg.IntegrityError as exc:
        raise ConstraintViolation(str(exc)) from exc
    except psycopg.OperationalError as exc:
        raise QueryFailed(str(exc)) from exc


def _to_halfvec(conn: psycopg.Connection, dim: int) -> list[str]:
    """Convert vector tables made before vectors were stored as halfvec; their names.
    Their HNSW indexes are dropped here and built again by the tables' DDL."""
    converted = []
    for name in VECTOR_TABLES:
        old = conn.execute(
            "SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) "
            "AND attname = 'embedding' AND atttypid = 'vector'::regtype", (name,)).fetchone()
        if old:
            log.info("converting %s to halfvec and rebuilding its HNSW index", name)
            conn.execute(f"DROP INDEX IF EXISTS {name}_hnsw")
            conn.execute(f"ALTER TABLE {name} ALTER COLUMN embedding TYPE halfvec({dim}) "
                         f"USING embedding::halfvec({dim})")
            converted.append(name)
    return converted


class PgDatabase(Handle):
    """One PostgreSQL database (schema chosen by the URL's search_path)."""

    dialect = POSTGRESQL
    write_begin = WRITE_TRANSACTION
    # One snapshot for several reads, as SQLite's deferred BEGIN gives.
    read_begin = "BEGIN ISOLATION LEVEL REPEATABLE READ"

    def __init__(self, url: str, *, embed_model: str, embed_dim: int) -> None:
        self.url = url
        self.path = redact(url)
        self.embed_model = embed_model
        self.embed_dim = embed_dim
        self._init_connections()
        with self._startup_lock() as conn:
            applied = _migrations.apply(
                conn, package="store.pg.migrations", begin=WRITE_TRANSACTION,
                run=lambda c, sql: c.execute(sql), dialect=POSTGRESQL,
            )
            self.vector_state = self._prepare_vectors(conn)
        if applied:
            log.info("postgresql migrations applied: %s", ", ".join(applied))

    # -- connections ---------------------------------------------------------------

    def _connect(self) -> psycopg.Connection:
        with _mapped():
            return psycopg.connect(self.url, autocommit=True)

    def _open(self) -> psycopg.Connection:
        conn = self._connect()
        # Filters (user, visibility) run inside the HNSW scan, which keeps going
        # until enough rows pass them (pgvector >= 0.8), instead of cutting short.
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        # psycopg prepares a statement run 5 times, and PostgreSQL may then plan it once
        # for any parameters: a full-text match planned without its tsquery scanned all
        # 10k chunks (37 ms against 3 ms). Searches are planned for their parameters.
        conn.execute("SET plan_cache_mode = force_custom_plan")
        # Tables and indexes are in memory (a chat backend's working set): at the default
        # 4, a GIN bitmap for 280 of 10k chunks lost to a scan of every row (9.6 ms
        # against 3.1 ms).
        conn.execute("SET random_page_cost = 1.1")
        _vectors.register(conn)
        return conn

    def _usable(self, conn: psycopg.Connection) -> bool:
        return not conn.closed  # the server may drop idle connections

    def _cursor(self, conn: psycopg.Connection, make: Callable[..., Any] | None) -> Any:
        return conn.cursor(row_factory=dict_row if make is None else args_row(make))

    def _mapped_errors(self):
        return _mapped()

    @contextmanager
    def copy(self, statement: str, types: Sequence[int | str]) -> Iterator[psycopg.Copy]:
        """`COPY ... FROM STDIN` on this thread's connection, fields sent as `types`
        (binary COPY needs them); driver errors mapped to store exceptions."""
        with _mapped(), self.connection().cursor().copy(statement) as copy:
            copy.set_types(types)
            yield copy

    def _in_transaction(self, conn: psycopg.Connection) -> bool:
        return conn.info.transaction_status != pq.TransactionStatus.IDLE

    def describe(self) -> str:
        version = self.scalar("SHOW server_version")
        schema = self.scalar("SELECT value FROM meta WHERE key = 'schema_version'")
        return f"postgresql {version}, schema v{schema}"

    # -- start-up ------------------------------------------------------------------

    @contextmanager
    def _startup_lock(self) -> Iterator[psycopg.Connection]:
        conn = self._connect()
        try:
            conn.execute("SELECT pg_advisory_lock(%s)", (STARTUP_LOCK,))
            yield conn
        finally:
            conn.close()  # ends the session, which releases the lock

    # -- vectors -----------------------------------------------------------------------

    def vectors(self, spec: VectorSpec, *, rescore: int = 400) -> PgVectors:
        """`rescore` tunes SQLite's in-memory copy; HNSW has its own (ef_search)."""
        return PgVectors(self, spec)

    def _prepare_vectors(self, conn: psycopg.Connection) -> VectorState:
        recorded = _meta.recorded_model(conn, dialect=POSTGRESQL)
        if recorded is not None and recorded != (self.embed_model, self.embed_dim):
            return VectorState(VectorStatus.CONFLICT,
                               _meta.conflict_detail(recorded, self.embed_model, self.embed_dim))
        with conn.transaction():
            converted = _to_halfvec(conn, self.embed_dim)
            for name, value in BUILD_SETTINGS.items() if converted else ():
                conn.execute(f"SET LOCAL {name} = '{value}'")  # their indexes are rebuilt
            for ddl in VECTOR_TABLES.values():
                conn.execute(ddl.format(dim=self.embed_dim))
            for statement in adopt_embedded():
                conn.execute(statement)
            _meta.record_model(conn, self.embed_model, self.embed_dim, dialect=POSTGRESQL)
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0]
        return VectorState(VectorStatus.OK, f"pgvector {version}, {self.embed_dim}-d, HNSW")

    def require_vectors(self) -> None:
        if not self.vector_state.ok:
            raise VectorUnavailable(self.vector_state.detail)

    def reset_vectors(self) -> None:
        """Drop every vector table and recreate it for the configured model (reindex)."""
        with self._startup_lock() as conn:
            with conn.transaction():
                for name in VECTOR_TABLES:
                    conn.execute(f"DROP TABLE IF EXISTS {name}")
                for statement in forget_embedded():
                    conn.execute(statement)
                _meta.forget_model(conn, dialect=POSTGRESQL)
            self.vector_state = self._prepare_vectors(conn)

    @contextmanager
    def bulk_vectors(self, tables: Collection[str] | None = None) -> Iterator[None]:
        """Write many vectors (reindex, bulk import) without the HNSW indexes of `tables`
        (vector table names; None: all), then build each index once: far faster than
        growing the graphs row by row. Searches meanwhile fall back to exact scans."""
        names = deferred_tables(tables, VECTOR_TABLES)
        conn = self.connection()
        for name in names:
            conn.execute(f"DROP INDEX IF EXISTS {name}_hnsw")
        try:
            yield
        finally:
            for setting, value in BUILD_SETTINGS.items():
                conn.execute(f"SET {setting} = '{value}'")
            for name in names:
                conn.execute(VECTOR_TABLES[name].format(dim=self.embed_dim))
            for setting in BUILD_SETTINGS:
                conn.execute(f"RESET {setting}")
            # Fresh statistics: with a user's row count unknown the planner scans that
            # user's rows exactly instead of using the new index, until autovacuum runs.
            conn.execute("ANALYZE")

    def backup(self, target: Path) -> None:
        raise StoreError(
            "chatsvc backup copies SQLite files; back PostgreSQL up with its own tools: "
            f'pg_dump --format=custom --file={target} "$CHATSVC_DATABASE_URL" '
            "(restore with pg_restore; pgvector's tables are included)")

    # -- background jobs ---------------------------------------------------------------

    @contextmanager
    def job_lock(self, job: str, key: str, *, wait: bool) -> Iterator[bool]:
        """Hold the advisory lock for (job, key) across replicas; yield whether it is held.

        wait=False gives up at once when another session holds it. The lock lives on
        its own connection, so the job may hop threads while holding it, and a
        crashed replica's lock goes with its connection.
        """
        conn = self._connect()
        try:
            name = (f"{job}:{key}",)
            if wait:
                conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", name)
                held = True
            else:
                held = conn.execute(
                    "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", name
                ).fetchone()[0]
            yield held
        finally:
            conn.close()
