"""SQLite: extension-capable connections, sqlite-vec on every connection, one per thread.

Python's stdlib sqlite3 here cannot load extensions, so connections come from
sqlean-py (a stdlib-compatible build with FTS5 and the trigram tokenizer, wheels
for Linux, macOS and Windows). sqlite-vec has crashed on connections shared
between threads, so every thread gets its own connection.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlean as sqlite3

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

from store import _meta, _migrations
from store._errors import (
    ConstraintViolation,
    DatabaseBusy,
    QueryFailed,
    StoreError,
    VectorUnavailable,
)
from store._handle import Handle
from store.contract import VectorState, VectorStatus
from store.sql import SQLITE
from store.sqlite import _schema
from store.sqlite._vectors import SqliteVectors
from store.vectors import VectorSpec, deferred_tables

log = logging.getLogger("chatsvc.store")

BUSY_TIMEOUT_MS = 5000
Connection = sqlite3.Connection


# Primary result codes of a lock another connection holds: SQLITE_BUSY past the busy
# timeout, SQLITE_LOCKED, and SQLITE_PROTOCOL, which WAL mode returns when it cannot get
# its locks after many tries (seen while an import of 150k messages was checkpointed).
_TRANSIENT_CODES = frozenset({5, 6, 15})


def _transient(exc: sqlite3.OperationalError) -> bool:
    # Not every OperationalError carries a code: the driver raises its own (a column
    # that will not decode as UTF-8) without one.
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _TRANSIENT_CODES


class SqliteDatabase(Handle):
    """One SQLite file. `connection()` hands each thread its own connection.

    Migrations run on open. Vector tables are created for `embed_model`/`embed_dim`
    unless sqlite-vec is missing or the file was indexed with another dimension;
    either way the store opens and `vector_state` says what is wrong.
    """

    dialect = SQLITE
    write_begin = "BEGIN IMMEDIATE"
    read_begin = "BEGIN"

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

    def _cursor(self, conn: Connection, make: Callable[..., Any] | None) -> Any:
        cursor = conn.cursor()
        if make is not None:
            cursor.row_factory = lambda _, row: make(*row)
        return cursor

    @contextmanager
    def _mapped_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as exc:
            raise ConstraintViolation(str(exc)) from exc
        except sqlite3.OperationalError as exc:
            if _transient(exc):
                raise DatabaseBusy(
                    f"the database is busy: another writer held it for over {BUSY_TIMEOUT_MS} ms"
                ) from exc
            raise QueryFailed(str(exc)) from exc

    def _in_transaction(self, conn: Connection) -> bool:
        return conn.in_transaction

    def describe(self) -> str:
        version = self.scalar("SELECT sqlite_version()")
        return f"sqlite {version}, schema v{_migrations.current_version(self.connection())}"

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

    def backup(self, target: Path) -> None:
        """SQLite's online backup API in one step: the copy is one committed state, and
        writers go on meanwhile (WAL). Written beside `target`, renamed when complete."""
        target = Path(target)
        if target.exists():
            raise StoreError(f"{target} exists already: give a new path")
        partial = target.with_name(target.name + ".partial")
        copy = sqlite3.connect(str(partial))
        try:
            with self._mapped_errors():
                self.connection().backup(copy)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        finally:
            copy.close()
        partial.replace(target)

    # -- vectors ---------------------------------------------------------------------

    def vectors(self, spec: VectorSpec, *, rescore: int = 400) -> SqliteVectors:
        return SqliteVectors(self, spec, rescore=rescore)

    @contextmanager
    def bulk_vectors(self, tables: Collection[str] | None = None) -> Iterator[None]:
        """Many vector writes ahead (reindex). vec0 has no index to defer: nothing to do
        (beyond refusing a table name, as PostgreSQL does)."""
        deferred_tables(tables, _schema.VECTOR_TABLES)
        yield

    def _prepare_vectors(self, conn: Connection) -> VectorState:
        if self._vec_error:
            return VectorState(
                VectorStatus.UNAVAILABLE, self._vec_error + "; install sqlite-vec>=0.1.9")
        recorded = _meta.recorded_model(conn)
        if recorded is not None and recorded != (self.embed_model, self.embed_dim):
            return VectorState(VectorStatus.CONFLICT,
                               _meta.conflict_detail(recorded, self.embed_model, self.embed_dim))
        with self.transaction():
            _schema.create_tables(conn, self.embed_model, self.embed_dim)
        version = self.scalar("SELECT vec_version()")
        return VectorState(VectorStatus.OK, f"sqlite-vec {version}, {self.embed_dim}-d")

    def require_vectors(self) -> None:
        """VectorUnavailable, with the operator's fix, unless vector search can run."""
        if not self.vector_state.ok:
            raise VectorUnavailable(self.vector_state.detail)

    def reset_vectors(self) -> None:
        """Drop every vector table and recreate it for the configured model (reindex)."""
        if self._vec_error:
            raise VectorUnavailable(self._vec_error)
        conn = self.connection()
        with self.transaction():
            _schema.drop_tables(conn)
            _schema.create_tables(conn, self.embed_model, self.embed_dim)
        self.vector_state = self._prepare_vectors(conn)
