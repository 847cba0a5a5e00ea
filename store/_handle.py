"""What both backends' databases share: per-thread connections, `$name` queries,
transactions with savepoints, driver errors mapped to store exceptions.

A backend subclasses `Handle` and provides `_open`, `_cursor`, `_mapped_errors`,
`_in_transaction` and its BEGIN statements; the domain stores only ever call
`execute`, `executemany`, `fetch`, `scalar`, `transaction` and `snapshot`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from store.sql import render

T = TypeVar("T")
Params = Mapping[str, Any]


class Handle:
    dialect: str
    # BEGIN of a write transaction and of a consistent multi-read snapshot.
    write_begin: str
    read_begin: str

    # -- connections -----------------------------------------------------------------

    def _init_connections(self) -> None:
        self._local = threading.local()
        self._all: list = []
        self._lock = threading.Lock()

    def _open(self) -> Any:
        raise NotImplementedError

    def _usable(self, conn: Any) -> bool:
        return True

    def connection(self) -> Any:
        """This thread's driver connection (each thread gets its own)."""
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

    # -- queries ---------------------------------------------------------------------

    def _cursor(self, conn: Any, make: Callable[..., Any] | None) -> Any:
        """A cursor whose rows answer to column names, or are `make(*values)`."""
        raise NotImplementedError

    def _mapped_errors(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def execute(self, query: str, params: Params | None = None) -> Any:
        """Run one `$name` query on this thread's connection; rows by column name."""
        cursor = self._cursor(self.connection(), None)
        with self._mapped_errors():
            return cursor.execute(render(query, self.dialect), params or {})

    def executemany(self, query: str, rows: Iterable[Params]) -> None:
        rows = list(rows)
        if rows:
            cursor = self._cursor(self.connection(), None)
            with self._mapped_errors():
                cursor.executemany(render(query, self.dialect), rows)

    def fetch(self, query: str, params: Params | None, make: Callable[..., T]) -> list[T]:
        """Every row as `make(*values)`: no per-row mapping object on hot paths."""
        cursor = self._cursor(self.connection(), make)
        with self._mapped_errors():
            return cursor.execute(render(query, self.dialect), params or {}).fetchall()

    def scalar(self, query: str, params: Params | None = None) -> Any:
        """The first column of the first row (None when there is no row)."""
        rows = self.fetch(query, params, lambda first, *_: first)
        return rows[0] if rows else None

    # -- transactions ----------------------------------------------------------------

    def _in_transaction(self, conn: Any) -> bool:
        raise NotImplementedError

    def in_transaction(self) -> bool:
        return self._in_transaction(self.connection())

    def _begin(self, conn: Any) -> None:
        with self._mapped_errors():
            conn.execute(self.write_begin)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A write transaction on this thread's connection, ROLLBACK on error.

        Nested inside another one on this thread it is a SAVEPOINT, so several store
        calls can commit together (or not at all) under one outer transaction.
        """
        conn = self.connection()
        nested = self._in_transaction(conn)
        if nested:
            conn.execute("SAVEPOINT nested")
        else:
            self._begin(conn)
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK TO nested" if nested else "ROLLBACK")
            if nested:
                conn.execute("RELEASE nested")
            raise
        with self._mapped_errors():
            conn.execute("RELEASE nested" if nested else "COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Several reads that see one consistent state of the database."""
        conn = self.connection()
        conn.execute(self.read_begin)
        try:
            yield
        finally:
            conn.execute("COMMIT")
