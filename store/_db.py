"""Connections: extension-capable SQLite, sqlite-vec on every connection, one per thread.

Python's stdlib sqlite3 here cannot load extensions, so connections come from
sqlean-py (a stdlib-compatible build with FTS5 and the trigram tokenizer, wheels
for Linux, macOS and Windows). sqlite-vec has crashed on connections shared
between threads, so every thread gets its own connection.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlean as sqlite3

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

from store import _migrations, _vectors
from store._errors import DatabaseBusy, VectorUnavailable
from store.contract import VectorState, VectorStatus

log = logging.getLogger("chatsvc.store")

BUSY_TIMEOUT_MS = 5000
Connection = sqlite3.Connection
IntegrityError = sqlite3.IntegrityError
OperationalError = sqlite3.OperationalError


class PerThreadConnections:
    """One connection per thread, each used only by the thread that opened it.

    Subclasses provide `_open()`; `_usable(conn)` lets a backend replace a
    connection the server closed. `close()` closes every thread's connection.
    """

    def _init_connections(self) -> None:
        self._local = threading.local()
        self._all: list = []
        self._lock = threading.Lock()

    def _open(self):
        raise NotImplementedError

    def _usable(self, conn) -> bool:
        return True

    def connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is None or not self._usable(conn):
            conn = self._open()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


class Database(PerThreadConnections):
    """One SQLite file. `connection()` hands each thread its own connection.

    Migrations run on open. Vector tables are created for `embed_model`/`embed_dim`
    unless sqlite-vec is missing or the file was indexed with another dimension;
    either way the store opens and `vector_state` says what is wrong.
    """

    dialect = "sqlite"

    def __init__(
        self,
        path: Path | str,
        *,
        embed_model: str,
        embed_dim: int,
        sqlite_vec_path: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.embed_model = embed_model
        self.embed_dim = embed_dim
        self._vec_path = sqlite_vec_path
        self._init_connections()
        self._vec_error: str | None = None
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = self.connection()
        _migrations.apply(conn)
        self.vector_state = self._prepare_vectors(conn)

    # -- connections ---------------------------------------------------------------

    def _open(self) -> Connection:
        # check_same_thread=False only so close() can run from the closing thread;
        # each connection is still used by the one thread that created it.
        conn = sqlite3.connect(
            str(self.path), isolation_level=None, check_same_thread=False, timeout=5
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        # Vector scans read every row; mapping the file avoids a copy per page (1.3-1.8x
        # faster fact search at 100k rows, evals/results/fact_search_latency.md).
        conn.execute("PRAGMA mmap_size = 1073741824")
        self._load_vec(conn)
        return conn

    def _load_vec(self, conn: Connection) -> None:
        try:
            conn.enable_load_extension(True)
            try:
                if self._vec_path:
                    conn.load_extension(self._vec_path)
                else:
                    import sqlite_vec

                    sqlite_vec.load(conn)
            finally:
                conn.enable_load_extension(False)
        except Exception as exc:  # missing package, wrong platform, bad path
            if self._vec_error is None:
                log.warning("sqlite-vec could not be loaded: %s", exc)
            self._vec_error = f"sqlite-vec could not be loaded ({exc})"

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """BEGIN IMMEDIATE ... COMMIT on this thread's connection; ROLLBACK on error.

        Nested inside another transaction on this thread it is a SAVEPOINT, so several
        store calls can commit together (or not at all) under one outer transaction.
        """
        conn = self.connection()
        if conn.in_transaction:
            yield from _savepoint(conn)
            return
        _begin_immediate(conn)
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def describe(self) -> str:
        conn = self.connection()
        version = conn.execute("SELECT sqlite_version()").fetchone()[0]
        return f"sqlite {version}, schema v{_migrations.current_version(conn)}"

    @contextmanager
    def job_lock(self, job: str, key: str, *, wait: bool) -> Iterator[bool]:
        """Exclusion for background jobs across every process on this file (`serve
        --workers`): an flock on a file beside it, which the OS drops with a crashed
        holder. wait=False gives up at once when another holds it."""
        if fcntl is None or str(self.path) == ":memory:":
            yield True  # one process only (no flock on Windows)
            return
        locks = self.path.with_name(self.path.name + "-locks")
        locks.mkdir(exist_ok=True)
        name = hashlib.sha256(f"{job}:{key}".encode()).hexdigest()[:32]
        with open(locks / name, "a+b") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextmanager
    def bulk_vectors(self) -> Iterator[None]:
        """Many vector writes ahead (reindex). vec0 has no index to defer: nothing to do."""
        yield

    # -- vectors ---------------------------------------------------------------------

    def _prepare_vectors(self, conn: Connection) -> VectorState:
        if self._vec_error:
            return VectorState(
                VectorStatus.UNAVAILABLE, self._vec_error + "; install sqlite-vec>=0.1.9")
        recorded = _vectors.recorded_model(conn)
        if recorded is None:
            with self.transaction():
                _vectors.create_tables(conn, self.embed_model, self.embed_dim)
            return VectorState(VectorStatus.OK, f"sqlite-vec {_vec_version(conn)}, {self.embed_dim}-d")
        model, dim = recorded
        if dim != self.embed_dim or model != self.embed_model:
            return VectorState(
                VectorStatus.CONFLICT,
                f"CONFLICT: vectors were built with {model} ({dim}-d) but the configured "
                f"model is {self.embed_model} ({self.embed_dim}-d); run `chatsvc reindex`",
            )
        with self.transaction():
            _vectors.create_tables(conn, self.embed_model, self.embed_dim)
        return VectorState(VectorStatus.OK, f"sqlite-vec {_vec_version(conn)}, {self.embed_dim}-d")

    def require_vectors(self) -> Connection:
        """This thread's connection, or VectorUnavailable with the operator's fix."""
        if not self.vector_state.ok:
            raise VectorUnavailable(self.vector_state.detail)
        return self.connection()

    def reset_vectors(self) -> None:
        """Drop every vector table and recreate it for the configured model (reindex)."""
        if self._vec_error:
            raise VectorUnavailable(self._vec_error)
        conn = self.connection()
        with self.transaction():
            _vectors.drop_tables(conn)
            _vectors.create_tables(conn, self.embed_model, self.embed_dim)
        self.vector_state = self._prepare_vectors(conn)


def _savepoint(conn: Connection) -> Iterator[Connection]:
    conn.execute("SAVEPOINT nested")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK TO nested")
        conn.execute("RELEASE nested")
        raise
    conn.execute("RELEASE nested")


def _vec_version(conn: Connection) -> str:
    return conn.execute("SELECT vec_version()").fetchone()[0]


def _begin_immediate(conn: Connection) -> None:
    """BEGIN IMMEDIATE; a lock held past the busy timeout is DatabaseBusy, not a crash."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
        raise DatabaseBusy(
            f"the database is busy: another writer held it for over {BUSY_TIMEOUT_MS} ms"
        ) from exc
